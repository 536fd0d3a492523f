//! iolens: live disk analysis for Linux — what the disks are doing, which
//! processes are doing it, how far a long copy has got, and (on demand)
//! what a disk can really do.
//!
//! # One-way flow: collect → model → view
//!
//! ```text
//!   /proc, /sys ──► collect ──RawSample──► model ──► ui::viewmodel ──► ui panes
//!   (or a captured tree,      (pure math,          (rows filtered     (draw only)
//!    --root)                   no I/O, no clock)    and sorted once)
//!                                     │
//!                                     ├──► batch (text, JSON), progress (text, JSON)
//!                                     └──► export (Prometheus); record stores RawSamples, replay feeds them back
//!   keys, signals, samples, probe messages ──Msg──► app::App::update ──Command──► run loop
//! ```
//!
//! Nothing flows backwards except messages: a view never reads the system,
//! the model never reads a clock (time comes from the samples), and the
//! controller changes state only in `App::update`, returning the work that
//! needs I/O as a command for the run loop.
//!
//! # What each module owns
//!
//! - [`collect`]: the only code that reads /proc and /sys, under a root
//!   (default "/", or a captured /proc and /sys tree with `--root`): raw
//!   counters with a monotonic timestamp. Parsers are pure functions over
//!   bytes, tested on captured fixture files.
//! - [`model`]: deltas between two raw samples → rates (`iostat -x` parity
//!   for devices), per-process rates, progress and ETA, history. Also names
//!   the collectors' types the views use (`model::ProcKey`, ...), so views
//!   never import [`collect`].
//! - [`ui`]: the dashboard's view state ([`ui::ViewState`]), the keymap
//!   ([`ui::keymap`]), the view-model ([`ui::viewmodel`]) and one file per
//!   pane; rendering is pure (ratatui `TestBackend` snapshots test it).
//! - [`app`]: the controller — [`app::App::update`] over messages, split
//!   into input, selection, probe control, the sampler thread and the run
//!   loop; actions on processes (SIGTERM, ionice) and the terminal guard.
//! - [`probe`]: the read-only disk probes (random-read latency, zone sweep),
//!   their statistics, verdict and results file; the `iolens probe` command.
//! - [`session`]: the one place that builds the collectors (cgroups, exit
//!   records, watched processes, the block tracer's wiring, the jobs'
//!   walks) from the options, and the one sampler loop (its clock, the
//!   short first interval) that the dashboard, the batch output, `iolens
//!   record`, `iolens export`, `iolens progress` and `iolens why` use.
//! - [`present`]: the presentation layer — one column table per row type
//!   (id, config key, headings of every output, width, alignment, value,
//!   formatting), from which the dashboard panes, the batch text and CSV
//!   are generated, and the text helpers they share; `ui` and `batch`
//!   import it, never each other.
//! - [`batch`]: the outputs without a terminal (`--batch`, `--json`,
//!   `--csv`, `iolens progress`, `iolens why`).
//! - [`record`]: `iolens record` appends the raw samples (with the host
//!   facts they were taken with) to a framed, CRC-checked file;
//!   `iolens replay` feeds them through the same model, so a replay gives
//!   the numbers the recorder saw.
//! - [`export`]: `iolens export`, a Prometheus exporter: counters
//!   accumulated from the model per command, cgroup and traced device,
//!   encoded with `prometheus-client`, served over HTTP (hyper) and/or
//!   written to a textfile.
//! - [`sys`]: the system-call module, the only place where Rust's safety
//!   checks may be switched off: rustix where it covers a call, audited
//!   wrappers otherwise (ioprio, getdents64, block-device ioctls, FIEMAP,
//!   io_uring, the probe's signal flag); the one privilege check and the
//!   one I/O-priority type.
//! - [`cli`], [`config`], [`format`]: flags (each also an `IOLENS_*`
//!   variable), the optional TOML config, units and escaping.
//!
//! # What the numbers mean
//!
//! Devices use Δ of the `/proc/diskstats` counters over the interval, with
//! 512-byte sectors, exactly as `iostat -x`: r/s = Δios/Δt, rMB/s =
//! Δsectors·512/Δt, r_await = Δticks/Δios (n/a, never 0, when Δios is 0),
//! rareq-sz = Δsectors·512/Δios, %rrqm = Δmerges/(Δmerges+Δios), aqu-sz =
//! Δweighted_ticks/Δt, %util = Δio_ticks/Δt. Fields a kernel does not have
//! are "not available", not zero; a counter that goes backwards re-baselines
//! instead of showing a huge rate. A process row is the process's own I/O
//! from `/proc/<pid>/io` (never its reaped children's), identified by
//! (pid, start time). Progress is `fdinfo` `pos` against the file's or
//! device's size; where it cannot be known (positional I/O, a growing
//! file) it says so instead of showing a bar. Units: throughput and
//! capacity decimal (kB/s, MB/s), request and buffer sizes binary (KiB);
//! what cannot be known is `n/a` (JSON `null`).
//!
//! # Probes
//!
//! Read-only: targets are opened `O_RDONLY` (plus `O_DIRECT` where it
//! works); nothing is ever written to a device or a user's file. Every test
//! has a time cap and an I/O cap, shows progress and stops at once when
//! cancelled. The cache is bypassed (`O_DIRECT`) or evicted
//! (`posix_fadvise`), and the result says which; dropping the page cache of
//! the whole machine needs root and an explicit yes. Results carry their
//! method (target, block size, queue depth, count, duration, cache
//! handling, the raw histogram).

// `unsafe` only in `sys` (checked by tests/pure/source_rules.rs).
#![deny(unsafe_code)]

pub mod app;
pub mod batch;
pub mod cli;
pub mod collect;
pub mod config;
pub mod export;
pub mod format;
pub mod model;
pub mod present;
pub mod probe;
pub mod record;
pub mod session;
pub mod stop;
#[allow(unsafe_code)]
pub mod sys;
pub mod ui;

//! The process part of [`Model::update`]: rows from the current sample's
//! processes, rates against the previous ones, and the exited rows.

use std::sync::Arc;

use super::{EXITED_KEEP_S, Model, ProcRow, attribution, procdev, process};
use crate::collect::RawSample;
use crate::collect::process::{PidMap, PidSet, ProcIo, ProcKey, RawProc};
use crate::model::process::ProcRates;
use crate::model::worker::{self, Worker};

impl Model {
    /// Returns a note per process whose counters jumped beyond what is
    /// possible (its rates are n/a for the interval, and it re-baselines).
    /// The current sample's processes move into the rows, and their
    /// counters into the baselines of the next update.
    pub(super) fn update_procs(
        &mut self,
        prev: Option<&RawSample>,
        cur: &mut RawSample,
        dt_s: Option<f64>,
    ) -> Vec<String> {
        let mut jumps = Vec::new();
        // IO% is known only when delay accounting was on at both samples
        // (no sysctl: a kernel before 5.14, where it is on by default).
        let delayacct = prev.is_some_and(|p| p.delayacct != Some(false)) && cur.delayacct != Some(false);
        // The previous rows go before the new ones are made (the baselines
        // are all that the rates need of them), but for the exited ones,
        // shown a few seconds more. Should the rows have been changed since
        // (not by an update), those are dropped too.
        let mut times = std::mem::take(&mut self.exited_at);
        // The new rows are made in the old ones' room.
        let mut rows = std::mem::take(&mut self.procs);
        if rows.iter().filter(|r| r.exited).count() != times.len() {
            times.clear();
        }
        let exited = rows.drain(..).filter(|r| r.exited);
        self.exited_rows.extend(exited.zip(times.drain(..)));
        let mut old = std::mem::take(&mut self.baselines);
        // Made before the rates' baselines may be dropped below: a
        // process's first counters are kept while it is listed.
        let baselines = process::baselines(&cur.procs.procs, &old, std::mem::take(&mut self.spare_baselines));
        if prev.is_none() {
            old.clear();
        }
        let mut before = process::BaselineWalk::new(&old);
        let files: PidMap<ProcKey, &crate::collect::fdinfo::FdProc> =
            cur.fds.procs.iter().map(|f| (f.key, f)).collect();
        // Sorted, as the baselines are.
        let prev_listed: Vec<ProcKey> = old.iter().map(|b| b.key).collect();
        let interval = self.attribution.update(
            prev.filter(|_| dt_s.is_some()).map(|p| attribution::Prev {
                listed: &prev_listed,
                boot_ns: p.boot_ns,
            }),
            &cur.procs,
            &cur.exits.records,
            cur.exits.active,
            self.clk_tck,
        );
        drop(prev_listed);
        let procs = std::mem::take(&mut cur.procs.procs);
        let need = procs.len() + self.exited_rows.len();
        if rows.capacity() > 2 * need {
            rows.shrink_to(need);
        }
        rows.reserve_exact(need);
        let mut firsts = process::BaselineWalk::new(&baselines);
        for mut p in procs {
            let was = before.find(&p.key);
            let mut rates = match (was, dt_s) {
                (Some(o), Some(dt)) => process::proc_rates(o, &p, dt, self.clk_tck, delayacct),
                _ => None,
            };
            if let (Some(Some(was_io)), Ok(now), Some(dt)) = (was.map(|o| &o.io), &p.io, dt_s)
                && process::implausible_jump(was_io, now, dt)
            {
                jumps.push(format!(
                    "pid {} ({}): /proc/{}/io jumped beyond 100 TB/s in {dt:.2} s: re-baselined",
                    p.key.pid, p.comm, p.key.pid
                ));
            }
            let fds = files.get(&p.key).copied();
            // A file with data (an empty lock file open for reading has
            // nothing to read) or a block device.
            let reads_files = fds.is_some_and(|f| {
                f.fds
                    .iter()
                    .any(|fd| fd.access().reads() && fd.size.is_some_and(|s| s > 0))
            });
            let devices = fds.map_or_else(Vec::new, |f| {
                let devs = f.fds.iter().map(|fd| fd.dev).chain(f.devs.iter().copied());
                procdev::devices_of(devs, &cur.disks, &cur.devices, &cur.anon_mounts)
            });
            let worker = self.worker_of(&p);
            let mut children_rates = None;
            let own = interval.own_of(&p.key);
            let own = own.as_ref();
            let since_start = self.since_start(&p, own, &mut firsts);
            if let (Some(own), Some(dt), Ok(now)) = (own, dt_s, &p.io) {
                // The process-wide delta: against the previous sample, or
                // from zero for a process born since.
                let whole = match was.map(|o| &o.io) {
                    Some(Some(was_io)) => Some(attribution::minus(now, was_io)),
                    None if interval.born.contains(&p.key) => Some(*now),
                    _ => None,
                };
                if let Some(whole) = whole {
                    let mut r = attribution::own_rates(rates, own, dt);
                    if rates.is_none() {
                        r.io_wait_pct = None;
                    }
                    rates = Some(r);
                    if !cur.exits.active {
                        let arrived = attribution::minus(&whole, own);
                        children_rates = process::io_rates(&ProcIo::default(), &arrived, dt).map(Box::new);
                    }
                }
            }
            // A page-cache share only for a reader of files.
            if !reads_files && let Some(r) = rates.as_mut() {
                r.cache_share = None;
            }
            // The threads' counters and delays were for the attribution
            // and the rates (taken above): a row keeps neither (on a
            // process's first sample, every process has them).
            p.threads = None;
            p.thread_blkio = None;
            rows.push(ProcRow {
                raw: p,
                rates: rates.map(|r| self.shared_rates.share(r)),
                since_start: since_start.map(|t| self.shared_rates.total(t)),
                devices,
                reads_files,
                worker,
                exited: false,
                children_rates,
            });
        }
        old.clear();
        self.spare_baselines = old;
        self.baselines = baselines;
        self.update_exited(&interval.exited, &rows, cur.mono_ns, dt_s);
        // Both maps hold only processes that did I/O or served a loop
        // device: a search of the listed ones each is cheaper than a set.
        let listed = &self.baselines;
        let live = |k: &ProcKey| listed.binary_search_by_key(k, |b| b.key).is_ok();
        self.loop_workers.retain(|k, _| live(k));
        self.own_total.retain(|k, _| live(k));
        // Exact: a doubled vector of rows was a sample's peak of memory.
        rows.reserve_exact(self.exited_rows.len());
        times.clear();
        for (row, at) in self.exited_rows.drain(..) {
            rows.push(row);
            times.push(at);
        }
        self.exited_at = times;
        self.proc_history.update(&rows);
        self.procs = rows;
        jumps
    }

    /// The I/O of `p` since it started: its own I/O summed over the
    /// intervals (kept only for a process that did I/O), or, without an
    /// attribution, its counters less its first ones.
    fn since_start(
        &mut self,
        p: &RawProc,
        own: Option<&ProcIo>,
        firsts: &mut process::BaselineWalk<'_>,
    ) -> Option<ProcIo> {
        match (own, &p.io) {
            // A total is kept only for a process that did I/O.
            (Some(own), Ok(_)) if *own == ProcIo::default() => {
                Some(self.own_total.get(&p.key).copied().unwrap_or_default())
            }
            (Some(own), Ok(_)) => {
                let t = self.own_total.entry(p.key).or_default();
                *t = attribution::plus(t, own);
                Some(*t)
            }
            (None, Ok(io)) => {
                let first = firsts.find(&p.key).and_then(process::Baseline::first).unwrap_or(*io);
                Some(attribution::minus(io, &first))
            }
            _ => None,
        }
    }

    /// A kernel worker's role; a kworker that served a loop device keeps
    /// that label while its comm names another workqueue.
    fn worker_of(&mut self, p: &RawProc) -> Option<Worker> {
        let kthread = p.key.pid == 2 || p.ppid == 2;
        match worker::classify(&p.comm, kthread)? {
            Worker::Loop(dev) => {
                self.loop_workers.insert(p.key, dev.clone());
                Some(Worker::Loop(dev))
            }
            Worker::Kworker => Some(
                self.loop_workers
                    .get(&p.key)
                    .map_or(Worker::Kworker, |d| Worker::Loop(d.clone())),
            ),
        }
    }

    /// Rows for processes that exited: their I/O over the part of the
    /// interval they lived, then zero for [`EXITED_KEEP_S`].
    fn update_exited(&mut self, exited: &[attribution::Exited], live: &[ProcRow], mono_ns: u64, dt_s: Option<f64>) {
        let keep_ns = (EXITED_KEEP_S * 1e9) as u64;
        self.exited_rows.retain(|(_, at)| mono_ns.saturating_sub(*at) < keep_ns);
        let zero = self.shared_rates.share(ProcRates::default());
        for (row, _) in &mut self.exited_rows {
            row.rates = Some(zero.clone());
        }
        let Some(dt) = dt_s else { return };
        if exited.is_empty() {
            return;
        }
        // The same uid's name as the first listed process of that uid has
        // (one pass over the rows, not one per exited process).
        let mut users: PidMap<u32, Option<Arc<str>>> = PidMap::default();
        for r in live {
            if let Some(uid) = r.raw.uid {
                users.entry(uid).or_insert_with(|| r.raw.user.clone());
            }
        }
        // An exited process's new row replaces its earlier one: one pass
        // over the kept rows (one per exited process made a fork storm's
        // update quadratic).
        // Its total then counts on from the earlier row's (records of a
        // process's threads can come in different samples).
        let keys: PidSet<ProcKey> = exited.iter().map(|e| e.key).collect();
        let mut earlier: PidMap<ProcKey, ProcIo> = PidMap::default();
        self.exited_rows.retain(|(r, _)| {
            if !keys.contains(&r.raw.key) {
                return true;
            }
            if let Some(t) = r.since_start.as_deref() {
                earlier.insert(r.raw.key, *t);
            }
            false
        });
        // One empty command line for them all, and each record's comm
        // shared (an allocation or two per exit under a fork storm).
        let cmdline: Arc<str> = Arc::from("");
        for e in exited {
            let raw = RawProc {
                key: e.key,
                ppid: e.ppid,
                comm: e.comm.clone(),
                cmdline: cmdline.clone(),
                state: 'X',
                nice: 0,
                uid: Some(e.uid),
                user: users.get(&e.uid).cloned().flatten(),
                ioprio: None,
                cpu_ticks: 0,
                blkio_ticks: None,
                num_threads: 1,
                thread_blkio: None,
                io: Ok(e.own),
                threads: None,
            };
            let rates = process::io_rates(&ProcIo::default(), &e.own, dt);
            // Totals: what was shown while it was listed (or on its earlier
            // exited row), and its last part.
            let shown = earlier.get(&e.key).or_else(|| self.own_total.get(&e.key));
            let total = attribution::plus(&shown.copied().unwrap_or_default(), &e.own);
            self.exited_rows.push((
                ProcRow {
                    rates: rates.map(|r| self.shared_rates.share(r)),
                    since_start: Some(self.shared_rates.total(total)),
                    exited: true,
                    ..ProcRow::example(raw)
                },
                mono_ns,
            ));
        }
    }
}

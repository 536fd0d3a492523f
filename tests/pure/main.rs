//! The tests that set up no devices, cgroups or workloads of their own:
//! parsers on captured fixture trees, model math on hand-computed cases,
//! rendering snapshots (TestBackend + insta), the source and module rules,
//! and the CLI run on fixture trees. One test binary instead of one a file: each
//! test binary is compiled and linked on its own, with its own copy of the
//! generic code it uses, so CI built the same code many times over. Every
//! module here is what was a file of its own under `tests/`, unchanged; the
//! live tests (loop devices, tracing, tmux, fio), and the runs of the binary
//! on this machine whose timing or peak memory another test's load would
//! disturb, stay one binary a file, so cargo runs them one after another.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/mutate.rs"]
mod mutate;

mod captured_trees_pure;
mod cgroup_pure;
mod collect_fixtures;
mod dirty_trace_pure;
mod dist;
mod doc_links;
mod docs_commands;
mod export_pure;
mod files_trace_pure;
mod iostat_parity;
mod model_update;
mod module_graph;
mod outputs;
mod parsers_pure;
mod record_frames_pure;
mod record_jobs_pure;
mod replay_ui_pure;
mod root_symlinks_pure;
mod sampled_marks;
mod source_rules;
mod trace_instances_pure;
mod trace_pure;
mod trace_text;
mod trace_ui_pure;
mod ui_render;
mod ui_small_terminals;

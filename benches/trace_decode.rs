//! Decode throughput of the tracefs page decoder on pages captured from
//! this kernel (tests/fixtures/trace-6.18): events per CPU-second for
//! decoding alone, and for decoding + CPU merge + the request model.
//!
//!     cargo bench --bench trace_decode
//!
//! The target is at least 1,000,000 events per CPU-second.

use std::path::Path;
use std::time::Duration;

use iolens::collect::process_cpu_ns;
use iolens::collect::trace::merge::Merger;
use iolens::collect::trace::{DecodeStats, Decoder};
use iolens::model::trace::Accumulator;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/trace-6.18");

fn main() {
    let dec = Decoder::load(&Path::new(DIR).join("events")).expect("fixture formats");
    let mut pages = Vec::new();
    for cpu in ["cpu0", "cpu1"] {
        pages.extend(std::fs::read(format!("{DIR}/{cpu}.raw")).expect("fixture pages"));
    }
    let budget = Duration::from_secs(2).as_nanos() as u64;

    // Decoding alone.
    let mut out = Vec::with_capacity(256);
    let mut st = DecodeStats::default();
    let t0 = process_cpu_ns();
    let mut rounds = 0u64;
    while process_cpu_ns() - t0 < budget {
        for _ in 0..1000 {
            out.clear();
            dec.decode_pages(&pages, &mut out, &mut st);
        }
        rounds += 1000;
    }
    let cpu = (process_cpu_ns() - t0) as f64 / 1e9;
    println!(
        "decode:                {:>12.0} events per CPU-second ({} pages, {} events in {cpu:.2} s CPU)",
        st.events as f64 / cpu,
        st.pages,
        st.events
    );
    assert_eq!(st.events, rounds * 107);

    // Decoding, merging the CPUs and feeding the request model; the time
    // stamps are shifted each round so requests stay distinct in time.
    let mut tracker = Accumulator::default();
    let mut merger = Merger::default();
    let mut merged = Vec::with_capacity(256);
    let mut st = DecodeStats::default();
    let t0 = process_cpu_ns();
    let mut round = 0u64;
    while process_cpu_ns() - t0 < budget {
        for _ in 0..200 {
            out.clear();
            merged.clear();
            dec.decode_pages(&pages, &mut out, &mut st);
            let shift = round * 1_000_000_000;
            for e in &mut out {
                e.ts += shift;
            }
            merger.push(&mut out, u64::MAX, &mut merged);
            tracker.feed(&merged);
            round += 1;
        }
        let _ = tracker.take_interval();
    }
    let cpu = (process_cpu_ns() - t0) as f64 / 1e9;
    println!(
        "decode + merge + model: {:>11.0} events per CPU-second ({} events in {cpu:.2} s CPU)",
        st.events as f64 / cpu,
        st.events
    );
}

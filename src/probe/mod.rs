//! Probe tests (see issue: probes).

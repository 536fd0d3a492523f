//! Folding a job's samples into its position (placeholder).

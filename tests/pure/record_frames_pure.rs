//! Property tests of the recording's frame decoder (seeded, bounded case
//! counts): whatever is done to the bytes, the decoder never panics, never
//! returns a frame that was not written, and loses no whole frame it
//! should keep.

use iolens::record::frame::{self, Damage, FrameRef, HEAD_LEN, kind};
use proptest::prelude::*;

/// The frames written, and the data: an arbitrary file head, then frames.
fn encode_all(head: &[u8], payloads: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
    let mut data = head.to_vec();
    let mut offsets = Vec::new();
    for (i, p) in payloads.iter().enumerate() {
        offsets.push(data.len());
        data.extend(frame::encode(kind::SAMPLE, 0, i as u64, p));
    }
    (data, offsets)
}

fn payload_of<'a>(data: &'a [u8], f: &FrameRef) -> &'a [u8] {
    &data[f.payload.0..f.payload.1]
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        rng_seed: proptest::test_runner::RngSeed::Fixed(16),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// Cut anywhere: every frame wholly before the cut comes back, in
    /// order and intact; the rest is one torn tail.
    #[test]
    fn truncation_keeps_every_whole_frame(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let (data, offsets) = encode_all(b"HEAD", &payloads);
        let cut = 4 + cut.index(data.len() - 4 + 1);
        let (frames, damage) = frame::scan(&data[..cut], 4);
        let whole = offsets.iter().zip(&payloads).filter(|(o, p)| *o + HEAD_LEN + p.len() <= cut).count();
        prop_assert_eq!(frames.len(), whole);
        for (i, f) in frames.iter().enumerate() {
            prop_assert_eq!(payload_of(&data, f), &payloads[i][..]);
            prop_assert_eq!(f.wall_ns, i as u64);
        }
        let torn = cut > offsets.get(whole).copied().unwrap_or(usize::MAX);
        prop_assert_eq!(damage.len(), usize::from(torn));
        if torn {
            let is_torn = matches!(damage[0], Damage::Torn { .. });
            prop_assert!(is_torn, "{:?}", damage);
        }
    }

    /// Flip bytes of one frame: every other frame comes back intact, and
    /// the damage is reported.
    #[test]
    fn a_damaged_frame_costs_only_itself(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..300), 2..8),
        which in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
    ) {
        let (mut data, offsets) = encode_all(b"", &payloads);
        let w = which.index(payloads.len());
        let len = HEAD_LEN + payloads[w].len();
        for (at, x) in &flips {
            data[offsets[w] + at.index(len)] ^= x;
        }
        let (frames, damage) = frame::scan(&data, 0);
        let got: Vec<u64> = frames.iter().map(|f| f.wall_ns).collect();
        let want: Vec<u64> = (0..payloads.len() as u64).filter(|i| *i != w as u64).collect();
        // The damaged frame itself may survive only if the flips left it
        // valid (they cannot: each flip changes a byte the CRC covers, or
        // the magic, or the length), so exactly the others come back.
        prop_assert_eq!(&got, &want, "{:?}", damage);
        for f in &frames {
            prop_assert_eq!(payload_of(&data, f), &payloads[f.wall_ns as usize][..]);
        }
        prop_assert!(!damage.is_empty());
    }

    /// Arbitrary bytes: no panic, and every frame returned is a valid one
    /// (its CRC matched), inside the data.
    #[test]
    fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..2000), start in 0usize..40) {
        let (frames, _) = frame::scan(&data, start.min(data.len()));
        for f in frames {
            prop_assert!(f.payload.1 <= data.len());
            prop_assert!(f.payload.1 - f.payload.0 <= frame::MAX_PAYLOAD as usize);
        }
    }

    /// Garbage spliced between frames is skipped; the frames around it
    /// come back.
    #[test]
    fn garbage_between_frames_is_skipped(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 2..6),
        junk in prop::collection::vec(any::<u8>(), 1..100),
        at in any::<prop::sample::Index>(),
    ) {
        let (data, offsets) = encode_all(b"", &payloads);
        let i = 1 + at.index(payloads.len() - 1);
        let mut spliced = data[..offsets[i]].to_vec();
        spliced.extend(&junk);
        spliced.extend(&data[offsets[i]..]);
        let (frames, _) = frame::scan(&spliced, 0);
        let got: Vec<u64> = frames.iter().map(|f| f.wall_ns).collect();
        let want: Vec<u64> = (0..payloads.len() as u64).collect();
        prop_assert_eq!(got, want);
    }
}

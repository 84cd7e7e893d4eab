//! Model tests on tiny snapshots written inline as JSON.

use super::*;
use std::io::Write;

fn load_json(text: &str) -> Result<Snapshot, LoadError> {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    load(f.path())
}

#[test]
fn a_json_snapshot_builds_segments_blocks_and_traces() {
    let s = load_json(
        r#"{"segments": [{"device": 0, "address": 1000, "total_size": 300, "stream": 0,
              "segment_type": "small", "segment_pool_id": [0, 0], "frames": [],
              "blocks": [{"size": 100, "state": "active_allocated", "requested_size": 90,
                          "frames": [{"name": "f", "filename": "a.py", "line": 3}]},
                         {"size": 200, "state": "inactive"}]}],
            "device_traces": [[{"action": "alloc", "addr": 1000, "size": 90, "stream": 0,
                                "frames": [{"name": "f", "filename": "a.py", "line": 3}]},
                               {"action": "mystery", "addr": 0, "size": 0, "stream": 0}], []]}"#,
    )
    .unwrap();
    assert_eq!(s.format, Format::Json);
    assert_eq!(
        s.segments[0].blocks[1].address, 1100,
        "address computed from the segment"
    );
    assert_eq!(s.trace(crate::vocab::Device::new(0)).len(), 2);
    assert_eq!(
        s.action_name(s.trace(crate::vocab::Device::new(0)).at(1).action()),
        "mystery"
    );
    assert_eq!(s.devices(), vec![0]);
    assert_eq!(s.unique_frames_and_stacks(), (1, 2));
}

#[test]
fn a_negative_size_is_an_error_naming_the_field() {
    let e = load_json(
        r#"{"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": -5}]]}"#,
    )
    .unwrap_err();
    assert!(
        e.message.contains("size") && e.message.contains("negative"),
        "{e}"
    );
}

#[test]
fn a_top_level_number_is_not_a_snapshot() {
    let e = load_json("[1, 2, 3]").unwrap_err();
    assert!(e.message.contains("segments[0]"), "{e}");
}

#[test]
fn known_index_is_the_position_in_known() {
    for (i, (a, _)) in Action::KNOWN.iter().enumerate() {
        assert_eq!(a.known_index(), Some(i), "{a:?}");
    }
    assert_eq!(Action::Other(3).known_index(), None);
}

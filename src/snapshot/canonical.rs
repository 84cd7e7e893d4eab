//! A snapshot's model in words, every id resolved to what it names: two
//! loads of one file compare equal here whatever order their strings,
//! frames and stacks were interned in. The oracle that a fast way of
//! decoding (the flat-dict path, entry templates) is tested against.

use std::fmt::Write;

use super::model::{Snapshot, StackId, TraceEntry, NO_META};

impl Snapshot {
    /// Every table of the model, ids resolved (tests and fuzzing).
    #[doc(hidden)]
    pub fn canonical(&self) -> String {
        let mut out = String::new();
        let o = &mut out;
        let _ = writeln!(o, "{:?} {:?} {}", self.format, self.shape, self.generation);
        let _ = writeln!(
            o,
            "trailing {} warnings {:?}",
            self.trailing_bytes, self.warnings
        );
        let _ = writeln!(o, "settings {:?}", self.allocator_settings);
        for d in self.devices() {
            let _ = writeln!(o, "device {}", d.index());
            for e in self.trace(d) {
                self.entry_line(o, &e);
            }
            for s in self.segments_of(d) {
                let _ = writeln!(
                    o,
                    " segment {} {} {} {} {:?} {} {:?} {:?} {} {}",
                    s.address,
                    s.total_size,
                    s.allocated_size,
                    s.active_size,
                    s.requested_size,
                    s.stream,
                    s.segment_type,
                    s.pool_id,
                    s.is_expandable,
                    self.stack_words(s.stack)
                );
                for b in &s.blocks {
                    let _ = writeln!(
                        o,
                        "  block {} {} {} {:?} {}",
                        b.address,
                        b.size,
                        b.requested_size,
                        b.state,
                        self.stack_words(b.stack)
                    );
                }
            }
        }
        for a in &self.annotations {
            let _ = writeln!(
                o,
                "annotation {:?} {:?} {:?} {:?} {}",
                self.str(a.name),
                self.str(a.stage_name),
                a.stage,
                a.device,
                a.time_us
            );
        }
        let _ = writeln!(o, "host");
        for e in self.host_trace() {
            self.entry_line(o, &e);
        }
        for h in &self.host_segments {
            let _ = writeln!(
                o,
                " host segment {} {} {} {}",
                h.address,
                h.size,
                h.allocated,
                self.stack_words(h.stack)
            );
        }
        out
    }

    fn entry_line(&self, o: &mut String, e: &TraceEntry) {
        let meta = (e.meta != NO_META).then(|| self.str(e.meta));
        let _ = writeln!(
            o,
            " {} {} {} {} {:?} {:?} {:?} {}",
            self.action_name(e.action()),
            e.addr,
            e.size,
            e.time_us,
            self.context(e),
            meta,
            self.entry_pool(e),
            self.stack_words(e.stack)
        );
    }

    fn stack_words(&self, stack: StackId) -> String {
        let frames = self.stack(stack).iter().map(|&f| {
            let frame = self.frame(f);
            format!(
                "{}:{}:{}",
                self.str(frame.filename),
                frame.line,
                self.str(frame.name)
            )
        });
        format!("[{}]", frames.collect::<Vec<_>>().join(" | "))
    }
}

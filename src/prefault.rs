//! Pre-faulting growing output buffers from a helper thread.
//!
//! Decoding a large snapshot fills a few hundred MB of fresh memory (trace
//! records, memo slots, the trace list), and the first write to each 4 KiB
//! page traps into the kernel, which clears the page: about a fifth of the
//! decode's time. The decoder asks, a few MB ahead of where it writes, for
//! the next pages to be made writable with `madvise(MADV_POPULATE_WRITE)`
//! on another core. This is only a hint: it never changes memory contents
//! (populating a page that is already there is a no-op), a request that
//! fails or is dropped costs nothing but the fault it would have saved,
//! and off Linux it does nothing.

/// Ask for the pages of `v`'s spare capacity between elements `from` and
/// `to` (clipped to the capacity) to be faulted in ahead of use.
pub fn ahead<T>(v: &Vec<T>, from: usize, to: usize) {
    let size = std::mem::size_of::<T>();
    let to = to.min(v.capacity());
    if from >= to || size == 0 {
        return;
    }
    let start = v.as_ptr() as usize + from * size;
    imp::request(start, (to - from) * size);
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod imp {
    use std::sync::mpsc::{sync_channel, SyncSender};
    use std::sync::{Mutex, OnceLock};

    const PAGE: usize = 4096;

    /// Where the helper thread takes (start, length) requests.
    type Queue = Mutex<SyncSender<(usize, usize)>>;

    static HELPER: OnceLock<Option<Queue>> = OnceLock::new();

    fn helper() -> Option<&'static Queue> {
        HELPER
            .get_or_init(|| {
                let (tx, rx) = sync_channel::<(usize, usize)>(64);
                std::thread::Builder::new()
                    .name("memgate-prefault".into())
                    .spawn(move || {
                        for (start, len) in rx {
                            let a = start & !(PAGE - 1);
                            let len = (start + len).div_ceil(PAGE) * PAGE - a;
                            // SAFETY: populating pages of our own mapping
                            // changes no memory contents; errors (a range
                            // freed meanwhile, an old kernel) are ignored.
                            unsafe {
                                libc::madvise(
                                    a as *mut libc::c_void,
                                    len,
                                    libc::MADV_POPULATE_WRITE,
                                );
                            }
                        }
                    })
                    .ok()?;
                Some(Mutex::new(tx))
            })
            .as_ref()
    }

    pub(super) fn request(start: usize, len: usize) {
        if let Some(h) = helper() {
            if let Ok(tx) = h.lock() {
                // Never wait: a full queue just means no hint this time.
                let _ = tx.try_send((start, len));
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(super) fn request(_start: usize, _len: usize) {}
}

#[cfg(test)]
mod tests {
    use super::ahead;

    #[test]
    fn hints_change_nothing_and_clip_to_the_capacity() {
        let mut v: Vec<u64> = Vec::with_capacity(1 << 20);
        v.extend(0..1000);
        ahead(&v, 1000, 1 << 22); // past the capacity: clipped
        ahead(&v, 5, 2); // empty range
        ahead(&Vec::<()>::new(), 0, 10); // zero-sized items
        ahead(&Vec::<u8>::new(), 0, 10); // no allocation
        std::thread::sleep(std::time::Duration::from_millis(20));
        v.extend(1000..(1 << 20));
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }
}

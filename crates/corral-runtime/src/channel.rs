//! What the library inside a program tells `corral run`, carried in the
//! stats region after the lock table (see [`crate::abi::ChannelHeader`]):
//! its one-line messages, the decision log, and the memory map at exit.
//! Nothing goes through a descriptor of the program's: one it closed and
//! reopened on its own file would get corral's bytes.
//!
//! Messages: any thread reserves room with one `fetch_add`, copies its
//! line, then publishes its length (a record reads as not yet written while
//! its length is 0). Once the area is full, lines are counted, not kept.
//! The log is a ring with one writer (the monitor, under its lock) and one
//! reader (`corral run`): a line that does not fit before the reader drains
//! is dropped and counted, never waited for.

use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use crate::abi::{channel_offset_for_len, ChannelHeader, EVENT_BYTES, MAPS_BYTES, MESSAGE_BYTES};

/// The channel of this process's region, or null where it has none.
static CHANNEL: AtomicPtr<u8> = AtomicPtr::new(core::ptr::null_mut());

/// A view of one region's channel: the header and the three areas after it.
#[derive(Clone, Copy, Debug)]
pub struct Channel {
    base: *mut u8,
}

// SAFETY: the header's fields are atomics; the areas are written only as
// the protocol above lets one writer at a time own a span.
unsafe impl Send for Channel {}
// SAFETY: as above.
unsafe impl Sync for Channel {}

const MESSAGES_AT: usize = core::mem::size_of::<ChannelHeader>();
const EVENTS_AT: usize = MESSAGES_AT + MESSAGE_BYTES;
const MAPS_AT: usize = EVENTS_AT + EVENT_BYTES;

impl Channel {
    /// The channel of the region of `len` bytes mapped at `region`.
    ///
    /// # Safety
    /// `region` is a live, writable mapping of `len` bytes, at least
    /// [`crate::abi::stats_file_len`]`(0)`, 64-byte aligned, that outlives
    /// every use of the returned view.
    pub unsafe fn at(region: *mut u8, len: usize) -> Self {
        Channel {
            // SAFETY: within the mapping (the caller's contract).
            base: unsafe { region.add(channel_offset_for_len(len)) },
        }
    }

    /// The header.
    pub fn header(&self) -> &ChannelHeader {
        // SAFETY: `at`'s contract: the header lies at `base`, aligned, all atomics.
        unsafe { &*(self.base as *const ChannelHeader) }
    }

    fn area(&self, at: usize, len: usize) -> *mut u8 {
        debug_assert!(at + len <= MAPS_AT + MAPS_BYTES);
        // SAFETY: within the channel (`at`'s contract covers every area).
        unsafe { self.base.add(at) }
    }

    /// The length word of the message record at `offset` of the area.
    fn message_len(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: `offset` is 4-aligned and leaves 4 bytes in the area
        // (callers check); the mapping is 64-byte aligned.
        unsafe { &*(self.area(MESSAGES_AT + offset, 4) as *const AtomicU32) }
    }

    /// Appends one message (no newline needed); counted as dropped where
    /// the area is full.
    pub fn say(&self, line: &[u8]) {
        let line = &line[..line.len().min(MESSAGE_BYTES / 4)];
        if line.is_empty() {
            return;
        }
        let need = 4 + line.len().next_multiple_of(4);
        let h = self.header();
        // Relaxed: the reservation only hands out disjoint spans; the
        // length's Release below publishes the bytes.
        let start = h.message_reserved.fetch_add(need as u32, Ordering::Relaxed) as usize;
        if start + need > MESSAGE_BYTES {
            // Relaxed: a count for the reader's summary.
            h.messages_dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // SAFETY: the span [start + 4, start + need) is this writer's alone
        // (the reservation above) and lies inside the area.
        unsafe {
            core::ptr::copy_nonoverlapping(
                line.as_ptr(),
                self.area(MESSAGES_AT + start + 4, line.len()),
                line.len(),
            );
        }
        // Release: a reader that sees the length sees the bytes.
        self.message_len(start)
            .store(line.len() as u32, Ordering::Release);
    }

    /// The messages published since `cursor` (a byte offset the reader
    /// keeps, starting at 0), advancing it past them; stops at one whose
    /// writer has not finished.
    pub fn messages_since(&self, cursor: &mut usize) -> Vec<String> {
        let mut out = Vec::new();
        // Relaxed: each record's length is read with Acquire below.
        let reserved = self.header().message_reserved.load(Ordering::Relaxed) as usize;
        let end = reserved.min(MESSAGE_BYTES);
        while *cursor + 4 <= end {
            // Acquire: pairs with `say`'s Release.
            let len = self.message_len(*cursor).load(Ordering::Acquire) as usize;
            if len == 0 || *cursor + 4 + len > MESSAGE_BYTES {
                break;
            }
            let mut bytes = vec![0u8; len];
            // SAFETY: a published record inside the area, never written again.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    self.area(MESSAGES_AT + *cursor + 4, len),
                    bytes.as_mut_ptr(),
                    len,
                );
            }
            out.push(String::from_utf8_lossy(&bytes).into_owned());
            *cursor += 4 + len.next_multiple_of(4);
        }
        out
    }

    /// Messages dropped for want of room.
    pub fn messages_dropped(&self) -> u32 {
        // Relaxed: a count.
        self.header().messages_dropped.load(Ordering::Relaxed)
    }

    /// Appends `line` (with its newline) to the log's ring; `false` (and
    /// counted) where it does not fit until the reader drains. One writer
    /// at a time.
    pub fn push_event(&self, line: &[u8]) -> bool {
        let h = self.header();
        // Relaxed: only this writer stores it.
        let written = h.events_written.load(Ordering::Relaxed);
        // Acquire: the reader is done with the bytes it has taken out.
        let read = h.events_read.load(Ordering::Acquire);
        let used = written.saturating_sub(read) as usize;
        if line.len() > EVENT_BYTES - used {
            // Relaxed: a count.
            h.events_dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let ring = self.area(EVENTS_AT, EVENT_BYTES);
        let at = (written % EVENT_BYTES as u64) as usize;
        let first = line.len().min(EVENT_BYTES - at);
        // SAFETY: [at, at + first) and [0, rest) lie in the ring and hold
        // no bytes the reader has yet to take (checked above).
        unsafe {
            core::ptr::copy_nonoverlapping(line.as_ptr(), ring.add(at), first);
            core::ptr::copy_nonoverlapping(line.as_ptr().add(first), ring, line.len() - first);
        }
        // Release: a reader that sees the count sees the bytes.
        h.events_written
            .store(written + line.len() as u64, Ordering::Release);
        true
    }

    /// Takes every log byte written since the last call out of the ring.
    /// One reader.
    pub fn drain_events(&self) -> Vec<u8> {
        let h = self.header();
        // Acquire: pairs with `push_event`'s Release.
        let written = h.events_written.load(Ordering::Acquire);
        // Relaxed: only this reader stores it.
        let read = h.events_read.load(Ordering::Relaxed);
        let len = written.saturating_sub(read).min(EVENT_BYTES as u64) as usize;
        let mut out = vec![0u8; len];
        let ring = self.area(EVENTS_AT, EVENT_BYTES);
        let at = (read % EVENT_BYTES as u64) as usize;
        let first = len.min(EVENT_BYTES - at);
        // SAFETY: published bytes of the ring, which the writer leaves
        // alone until `events_read` passes them.
        unsafe {
            core::ptr::copy_nonoverlapping(ring.add(at), out.as_mut_ptr(), first);
            core::ptr::copy_nonoverlapping(ring, out.as_mut_ptr().add(first), len - first);
        }
        // Release: the writer may reuse the bytes once it sees this.
        h.events_read.store(read + len as u64, Ordering::Release);
        out
    }

    /// Log lines dropped because the ring was full.
    pub fn events_dropped(&self) -> u64 {
        // Relaxed: a count.
        self.header().events_dropped.load(Ordering::Relaxed)
    }

    /// Writes the memory map (once, at exit), cut at a line end where
    /// longer than the area.
    pub fn write_maps(&self, text: &[u8]) {
        let h = self.header();
        // Relaxed: the exit writes it once; a second writer would be a
        // forked child, which does not save its maps.
        if h.maps_len.load(Ordering::Relaxed) != 0 {
            return;
        }
        let mut len = text.len().min(MAPS_BYTES);
        if len < text.len() {
            len = text[..len]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            // Relaxed: published by the length's Release.
            h.maps_cut.store(1, Ordering::Relaxed);
        }
        // SAFETY: the area holds MAPS_BYTES and nobody else writes it.
        unsafe { core::ptr::copy_nonoverlapping(text.as_ptr(), self.area(MAPS_AT, len), len) };
        // Release: a reader that sees the length sees the text.
        h.maps_len.store(len as u32, Ordering::Release);
    }

    /// Records the threads made before the load (the shim's count).
    pub fn set_threads_made_before_load(&self, n: u32) {
        // Relaxed: a count read after the program ends.
        self.header()
            .threads_made_before_load
            .store(n, Ordering::Relaxed);
    }

    /// Counts one `pthread_create` since the load.
    #[inline]
    pub fn thread_made(&self) {
        // Relaxed: a count read after the program ends.
        self.header()
            .threads_made_after_load
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Takes back one count of [`Self::thread_made`]: a thread of corral's.
    pub fn thread_unmade(&self) {
        // Relaxed: a count read after the program ends.
        let _ = self.header().threads_made_after_load.fetch_update(
            Ordering::Relaxed,
            Ordering::Relaxed,
            |n| n.checked_sub(1),
        );
    }

    /// Threads made before the load and after it.
    pub fn threads_made(&self) -> (u32, u32) {
        let h = self.header();
        // Relaxed: counts.
        (
            h.threads_made_before_load.load(Ordering::Relaxed),
            h.threads_made_after_load.load(Ordering::Relaxed),
        )
    }

    /// The memory map written at exit, if any.
    pub fn maps(&self) -> Option<String> {
        // Acquire: pairs with `write_maps`' Release.
        let len = self.header().maps_len.load(Ordering::Acquire) as usize;
        if len == 0 || len > MAPS_BYTES {
            return None;
        }
        let mut bytes = vec![0u8; len];
        // SAFETY: published text inside the area.
        unsafe { core::ptr::copy_nonoverlapping(self.area(MAPS_AT, len), bytes.as_mut_ptr(), len) };
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Makes `channel` this process's (the library's region, mapped for good).
pub fn install(channel: Channel) {
    // Release: a thread that sees the pointer sees the mapping.
    CHANNEL.store(channel.base, Ordering::Release);
}

/// This process's channel, if its region was adopted.
pub fn current() -> Option<Channel> {
    // Acquire: pairs with `install`'s Release.
    let base = CHANNEL.load(Ordering::Acquire);
    (!base.is_null()).then_some(Channel { base })
}

/// Says `line` to `corral run`, which prints it on its own stderr. Where
/// this process has no channel (it was not started by `corral run`, or the
/// region could not be made), the line is dropped: the program's
/// descriptor 2 may be any file of its own.
pub fn say(line: &str) {
    if let Some(c) = current() {
        c.say(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::stats_file_len;

    /// A zeroed, 64-byte aligned region of `stats_file_len(max)` bytes.
    fn region(max: u32) -> (Vec<u64>, Channel) {
        let len = stats_file_len(max);
        let mut words = vec![0u64; len.div_ceil(8) + 8];
        let base = words.as_mut_ptr() as usize;
        let aligned = base.next_multiple_of(64) as *mut u8;
        // SAFETY: the vector holds the region past the aligned start and
        // outlives the view in each test.
        let c = unsafe { Channel::at(aligned, len) };
        (words, c)
    }

    #[test]
    fn messages_arrive_whole_and_in_order_and_overflow_is_counted() {
        let (_keep, c) = region(2);
        let mut cursor = 0;
        assert!(c.messages_since(&mut cursor).is_empty());
        c.say(b"corral: one");
        c.say(b"two");
        assert_eq!(c.messages_since(&mut cursor), ["corral: one", "two"]);
        assert!(c.messages_since(&mut cursor).is_empty());
        let long = vec![b'x'; MESSAGE_BYTES / 4];
        for _ in 0..8 {
            c.say(&long);
        }
        let got = c.messages_since(&mut cursor);
        assert_eq!(got.len(), 3, "the area holds three more long lines");
        assert!(c.messages_dropped() >= 4);
    }

    #[test]
    fn an_unpublished_message_stops_the_reader_until_it_is() {
        let (_keep, c) = region(2);
        // A writer that reserved and has not yet published.
        c.header().message_reserved.store(8, Ordering::Relaxed);
        c.say(b"after");
        let mut cursor = 0;
        assert!(c.messages_since(&mut cursor).is_empty());
        c.message_len(0).store(1, Ordering::Release);
        assert_eq!(c.messages_since(&mut cursor).len(), 2);
    }

    #[test]
    fn the_log_ring_wraps_and_drops_what_does_not_fit() {
        let (_keep, c) = region(2);
        let line = vec![b'a'; EVENT_BYTES / 3 + 1];
        assert!(c.push_event(&line));
        assert!(c.push_event(&line));
        assert!(!c.push_event(&line), "a third does not fit before a drain");
        assert_eq!(c.events_dropped(), 1);
        assert_eq!(c.drain_events().len(), 2 * line.len());
        let mut wrapped = vec![b'b'; EVENT_BYTES / 2];
        wrapped.push(b'\n');
        assert!(c.push_event(&wrapped), "room again, across the ring's end");
        assert_eq!(c.drain_events(), wrapped);
        assert!(c.drain_events().is_empty());
    }

    #[test]
    fn the_maps_are_written_once_and_cut_at_a_line() {
        let (_keep, c) = region(2);
        assert_eq!(c.maps(), None);
        let line = b"7f00-7f01 r-xp 0 00:00 0 /lib/x.so\n";
        let text: Vec<u8> = line
            .iter()
            .copied()
            .cycle()
            .take(MAPS_BYTES + 100)
            .collect();
        c.write_maps(&text);
        let got = c.maps().unwrap();
        assert!(got.len() <= MAPS_BYTES && got.ends_with('\n'));
        assert_eq!(c.header().maps_cut.load(Ordering::Relaxed), 1);
        c.write_maps(b"other\n");
        assert_eq!(c.maps().unwrap(), got, "written once");
    }
}

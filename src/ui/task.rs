//! Work on a worker thread, the one way the window runs it: started with what it computes,
//! a repaint each time it sends something, polled by the frame, cancelled when dropped (a
//! newer task replacing it, a closed file) or when asked.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};

use eframe::egui;

/// A task's side of the channel: sends its messages (each wakes the window) and reads its
/// cancel flag.
pub struct Outbox<M> {
    tx: Sender<M>,
    ctx: Option<egui::Context>,
    cancel: Arc<AtomicBool>,
}

impl<M> Outbox<M> {
    /// Sends `m`; false once nobody listens (the job was dropped).
    pub fn send(&self, m: M) -> bool {
        let sent = self.tx.send(m).is_ok();
        if let Some(ctx) = &self.ctx {
            ctx.request_repaint();
        }
        sent
    }

    /// The flag the job's long loops poll.
    pub fn cancel_flag(&self) -> &AtomicBool {
        &self.cancel
    }

    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

impl<M> Clone for Outbox<M> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            ctx: self.ctx.clone(),
            cancel: self.cancel.clone(),
        }
    }
}

/// Raises the flag when dropped: a job nobody waits for any more stops.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A task keyed by what it computes (`K`: a window, a query, a filter), sending `M`s.
pub struct Task<K, M> {
    pub key: K,
    rx: Receiver<M>,
    cancel: CancelOnDrop,
}

impl<K, M: Send + 'static> Task<K, M> {
    /// Runs `work` on a new thread. `ctx` is repainted at each message (`None` in tests
    /// that poll without a window).
    pub fn spawn(
        key: K,
        ctx: Option<&egui::Context>,
        work: impl FnOnce(Outbox<M>) + Send + 'static,
    ) -> Self {
        let (tx, rx) = channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let outbox = Outbox {
            tx,
            ctx: ctx.cloned(),
            cancel: cancel.clone(),
        };
        std::thread::spawn(move || {
            work(outbox);
            // A job's freed temporaries go back to the system: between loads glibc keeps
            // freed blocks for reuse, and after an analysis they are hundreds of MB.
            crate::memory::trim();
        });
        Self {
            key,
            rx,
            cancel: CancelOnDrop(cancel),
        }
    }

    /// Runs `work` and sends what it returns, once.
    pub fn compute(
        key: K,
        ctx: Option<&egui::Context>,
        work: impl FnOnce(&AtomicBool) -> M + Send + 'static,
    ) -> Self {
        Self::spawn(key, ctx, |out| {
            let m = work(out.cancel_flag());
            out.send(m);
        })
    }

    /// The next message, if one came in.
    pub fn poll(&self) -> Option<M> {
        self.rx.try_recv().ok()
    }

    pub fn cancel(&self) {
        self.cancel.0.store(true, Ordering::Relaxed);
    }
}

/// Polls the job in `slot`: its answer, with its key, once in (the slot then empty). For
/// jobs that send one message.
pub fn take_answer<K, M: Send + 'static>(slot: &mut Option<Task<K, M>>) -> Option<(K, M)> {
    let m = slot.as_ref()?.poll()?;
    let job = slot.take()?;
    Some((job.key, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_answers_once_and_a_dropped_one_is_cancelled() {
        let mut slot = Some(Task::compute(7, None, |_| 6 * 7));
        let answer = loop {
            if let Some(a) = take_answer(&mut slot) {
                break a;
            }
            std::thread::yield_now();
        };
        assert_eq!(answer, (7, 42));
        assert!(slot.is_none());

        let (seen_tx, seen_rx) = channel();
        let job: Task<(), ()> = Task::spawn((), None, move |out| {
            while !out.cancelled() {
                std::thread::yield_now();
            }
            let _ = seen_tx.send(());
        });
        drop(job);
        assert!(
            seen_rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .is_ok()
        );
    }
}

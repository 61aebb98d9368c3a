//! A policy decorator that logs every input and every output.
//!
//! [`DecisionLog::wrap`] puts a policy inside a recorder that forwards every call unchanged and
//! appends each input, with the outputs the policy produced in answer to it (the outputs drained
//! before the next input), to a shared log. Both drivers drain a policy's outputs right after each
//! input, so the log attributes every decision to the input that caused it, in either world.

use std::sync::{Arc, Mutex};

use foresight_core::{FileId, Instant};
use foresight_policy::{Input, Output, Policy};

/// One input and the outputs that answered it. `input` is `None` for a timer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// What the driver said (`None`: the policy's timer fired).
    pub input: Option<Input>,
    /// What the policy asked for in answer.
    pub outputs: Vec<Output>,
    /// When, by the driver's clock (simulated time, or real time since the engine started).
    pub at: Instant,
}

/// A shared log of decisions; clones share it.
#[derive(Clone, Debug, Default)]
pub struct DecisionLog {
    log: Arc<Mutex<Vec<Decision>>>,
    files: Arc<Mutex<Vec<foresight_policy::layout::FileLayout>>>,
}

impl DecisionLog {
    /// An empty log.
    pub fn new() -> DecisionLog {
        DecisionLog::default()
    }

    /// Wraps `policy` so that it records into this log.
    pub fn wrap(&self, policy: Box<dyn Policy>) -> Box<dyn Policy> {
        Box::new(Recording {
            inner: policy,
            log: self.clone(),
        })
    }

    /// Everything recorded so far.
    pub fn decisions(&self) -> Vec<Decision> {
        self.log.lock().expect("decision log poisoned").clone()
    }

    /// The files the driver put in the policy's layout while it ran (`Policy::add_file`), in
    /// `FileId` order, the latest under each id: where the engine placed the files it opened on
    /// its modelled volume.
    pub fn files(&self) -> Vec<foresight_policy::layout::FileLayout> {
        self.files.lock().expect("decision log poisoned").clone()
    }

    fn push(&self, d: Decision) {
        self.log.lock().expect("decision log poisoned").push(d);
    }

    fn answer(&self, o: &Output) {
        let mut log = self.log.lock().expect("decision log poisoned");
        match log.last_mut() {
            Some(d) => d.outputs.push(o.clone()),
            None => log.push(Decision {
                input: None,
                outputs: vec![o.clone()],
                at: Instant::ZERO,
            }),
        }
    }
}

struct Recording {
    inner: Box<dyn Policy>,
    log: DecisionLog,
}

impl Policy for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn handle(&mut self, now: Instant, input: Input) {
        self.log.push(Decision {
            input: Some(input.clone()),
            outputs: Vec::new(),
            at: now,
        });
        self.inner.handle(now, input);
    }

    fn poll_output(&mut self) -> Option<Output> {
        let o = self.inner.poll_output()?;
        self.log.answer(&o);
        Some(o)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.inner.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.log.push(Decision {
            input: None,
            outputs: Vec::new(),
            at: now,
        });
        self.inner.handle_timeout(now);
    }

    fn add_file(&mut self, id: FileId, file: foresight_policy::layout::FileLayout) {
        let mut files = self.log.files.lock().expect("decision log poisoned");
        match files.get_mut(id.0 as usize) {
            Some(slot) => *slot = file.clone(),
            None => files.push(file.clone()),
        }
        drop(files);
        self.inner.add_file(id, file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foresight_core::{ByteLen, ByteRange, StreamId};
    use foresight_policy::{Layout, PolicyConfig};

    #[test]
    fn records_inputs_with_their_answers() {
        let layout = Arc::new(Layout::unplaced(&[ByteLen::mib(1)]));
        let log = DecisionLog::new();
        let mut p = log.wrap(foresight_policy::build(&PolicyConfig::default(), layout).unwrap());
        p.handle(
            Instant::ZERO,
            Input::Read {
                stream: StreamId(0),
                file: FileId(0),
                range: ByteRange::new(0, 4096),
                miss: Some(foresight_core::ByteOffset(0)),
            },
        );
        while p.poll_output().is_some() {}
        let d = log.decisions();
        assert_eq!(d.len(), 1);
        assert!(
            !d[0].outputs.is_empty(),
            "seqp opens a window on the first read"
        );
        assert_eq!(p.name(), "seqp");
    }
}

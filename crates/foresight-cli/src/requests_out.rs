//! The file `sim --requests-out` writes, one CSV line per application request.
//!
//! The path is opened before the run, so that one that cannot be written is refused at once, but
//! it is not emptied then: a config can still be refused while the run is being built (files that
//! do not fit the volume, a bad trace line), and bad input must leave a file that was there as it
//! was and take away one it created. The file is emptied and given its header at the first record,
//! or at the end of a run that had none. From the moment the file is this run's (created, or
//! emptied), a signal, a write that fails (a full disk) or bad input met during the run (a trace is
//! read as it is replayed) removes it rather than leave it cut short mid-line: the records of part
//! of a run are not its output.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use foresight_sim::metrics::{CsvRequests, RequestRecord, RequestSink};

use crate::cleanup;

/// The `--requests-out` file of one run.
pub struct RequestsOut {
    path: PathBuf,
    /// The file until the first record.
    file: Option<File>,
    /// The CSV from the first record on.
    csv: Option<CsvRequests<File>>,
    /// Whether the file is this run's: created by it, or emptied for its records.
    ours: bool,
    /// Whether the path is a regular file, which is emptied and may be removed; `/dev/null`, a
    /// FIFO or a terminal is written as it is and never removed.
    regular: bool,
    on_signal: Option<cleanup::Registered>,
}

impl RequestsOut {
    /// Opens (or creates) `path` for writing without emptying it.
    pub fn open(path: &Path) -> io::Result<RequestsOut> {
        let before = std::fs::metadata(path).ok();
        let created = before.is_none();
        let open = |p: &Path| {
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                // Emptied at the first record instead (`started`).
                .truncate(false)
                .open(p)
        };
        // Registered as it is created, so that no moment is left in which it exists
        // unregistered while a signal is handled.
        let (file, on_signal) = if created {
            let (file, on_signal) = cleanup::create_removed_on_signal(path.to_path_buf(), open)?;
            (file, Some(on_signal))
        } else {
            (open(path)?, None)
        };
        Ok(RequestsOut {
            path: path.to_path_buf(),
            file: Some(file),
            csv: None,
            ours: created,
            regular: before.is_none_or(|m| m.is_file()),
            on_signal,
        })
    }

    /// The CSV, started (the file emptied, the header written) if this is the first call.
    fn started(&mut self) -> io::Result<&mut CsvRequests<File>> {
        if self.csv.is_none() {
            let file = self
                .file
                .take()
                .expect("the file is kept until the CSV starts");
            if self.regular {
                if self.on_signal.is_none() {
                    // Emptied and registered in one step: a signal before leaves the file as it
                    // was, one after removes it, and none finds it emptied and unregistered.
                    let ((), on_signal) =
                        cleanup::create_removed_on_signal(self.path.clone(), |_| file.set_len(0))?;
                    self.on_signal = Some(on_signal);
                } else {
                    file.set_len(0)?;
                }
                self.ours = true;
            }
            self.csv = Some(CsvRequests::new(file)?);
        }
        Ok(self.csv.as_mut().expect("started above"))
    }

    /// The run finished: writes out what is buffered (the header alone if there was no request).
    /// A write that fails removes the file, as [`RequestsOut::failed`] does.
    pub fn finish(mut self) -> io::Result<()> {
        let written = self
            .started()
            .map(drop)
            .and_then(|()| self.csv.take().expect("started above").finish().map(drop));
        if written.is_err() {
            self.failed();
        }
        written
    }

    /// A write failed and stopped the run: the file, cut short, is removed if it is this run's
    /// (created by it, or emptied for its records); one it has not touched is left as it was.
    pub fn failed(self) {
        if self.regular && self.ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// The run was refused: a file it created is removed, and so is one it had emptied for its
    /// records (bad input met during the run); one that was there and not yet emptied is left as
    /// it was.
    pub fn abandon(self) {
        self.failed();
    }
}

impl RequestSink for RequestsOut {
    fn push(&mut self, record: &RequestRecord) -> io::Result<()> {
        self.started()?.push(record)
    }
}

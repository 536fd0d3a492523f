//! The jobs part of a model update: exit statuses from the sample's exit
//! records, the jobs' views ([`JobTracker`]), and the transfers listed
//! under the job they belong to.

use super::Model;
use super::jobs::track::Seen;
use super::progress::Label;
use crate::collect::RawSample;

impl Model {
    pub(super) fn update_jobs(&mut self, cur: &mut RawSample) {
        for r in cur.exits.records.iter().filter(|r| r.pid == r.tgid) {
            let Some(status) = r.exit_status else { continue };
            self.jobs.note_exit(r.tgid, status, cur.mono_ns);
            // A process that exited 0 finished the file it was reading:
            // its transfer is done, not "ended at 30%".
            if status == 0 {
                for j in self
                    .progress
                    .jobs
                    .iter_mut()
                    .filter(|j| j.proc.pid == r.tgid && j.is_done())
                {
                    for t in std::iter::once(&mut j.main).chain(j.others.iter_mut()) {
                        if t.label == (Label::Done { complete: false }) {
                            t.label = Label::Done { complete: true };
                            if let Some(s) = t.size {
                                t.pos = t.pos.max(s);
                                t.percent = Some(100.0);
                            }
                        }
                    }
                }
            }
        }
        let seen = Seen {
            files: &self.progress.jobs,
            fds: &cur.fds.procs,
        };
        self.jobs.update(std::mem::take(&mut cur.jobs), &seen, cur.mono_ns);
        // The transfers of a job follow it, in the jobs' order; the others
        // keep theirs after them.
        let views = &self.jobs.views;
        let job_of = |pid: i32| views.iter().position(|v| v.pids.contains(&pid)).unwrap_or(usize::MAX);
        self.progress.jobs.sort_by_key(|j| job_of(j.proc.pid));
    }
}

//! State of the results pane, updated from [`ProbeMsg`]s. Pure data: the
//! pane (`ui::results`) only reads it.

use super::{ProbeMsg, ProbeResult, Progress, Status};

#[derive(Debug, Clone, Default)]
pub enum RunState {
    /// No probe started in this session.
    #[default]
    Idle,
    /// Started, no progress yet.
    Starting,
    Running(Progress),
    Finished(Box<ProbeResult>),
    /// Cancelled: the partial result, once the probe thread has stopped.
    Cancelled(Option<Box<ProbeResult>>),
    Failed(String),
}

#[derive(Debug, Clone, Default)]
pub struct ProbeView {
    /// Target as shown (escaped).
    pub target: String,
    /// "random read + zone sweep, quick".
    pub plan: String,
    pub state: RunState,
    /// Finished results of this session, newest last (the current one
    /// included once finished).
    pub past: Vec<ProbeResult>,
}

impl ProbeView {
    /// A new probe was started (only one runs at a time).
    pub fn start(&mut self, target: String, plan: String) {
        self.target = target;
        self.plan = plan;
        self.state = RunState::Starting;
    }

    pub fn is_running(&self) -> bool {
        matches!(self.state, RunState::Starting | RunState::Running(_))
    }

    /// Esc was pressed: show "cancelled" at once, without waiting for the
    /// read in flight; the partial result fills in when it arrives.
    pub fn cancel_requested(&mut self) {
        if self.is_running() {
            self.state = RunState::Cancelled(None);
        }
    }

    pub fn apply(&mut self, msg: ProbeMsg) {
        match msg {
            ProbeMsg::Progress(p) => {
                if self.is_running() {
                    self.state = RunState::Running(p);
                }
            }
            ProbeMsg::Finished(r) => {
                self.past.push((*r).clone());
                self.state = match r.status {
                    Status::Completed if !matches!(self.state, RunState::Cancelled(_)) => RunState::Finished(r),
                    _ => RunState::Cancelled(Some(r)),
                };
            }
            ProbeMsg::Failed(e) => self.state = RunState::Failed(e),
        }
    }
}

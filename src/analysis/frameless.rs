//! Categories of allocations recorded without a single frame, from what
//! they did (docs/figures.md#frameless-allocations): the stage of the
//! training step they were made in and the stage they were freed in, both
//! read from the allocations around them that have frames. torch_npu on
//! AArch64 records no frames for the autograd engine's allocations, so on
//! such a trace every gradient is frameless; the rules here name them.
//!
//! * The stage at an entry is that of the latest allocation with frames
//!   at or before it: `activation` is the forward, `gradient` the
//!   backward, `optimizer-state` the optimizer step; an allocation with
//!   frames of any other category ends the stage (none until the next).
//! * Made in the backward: `gradient`, whenever it is freed (a parameter's
//!   gradient lives into the optimizer step; an activation's gradient is
//!   freed within the backward, as the autograd rows of the default rules
//!   count it).
//! * Made in the optimizer step: `optimizer-state`, whenever it is freed
//!   (state kept for the next step, or the step's temporaries).
//! * Made in the forward and freed in the forward or the backward:
//!   `activation`.
//! * Anything else (made before any stage, after an allocation of another
//!   category, or made in the forward and still live after the backward)
//!   has no rule: it stays `frameless`.
//!
//! Only the default rules (and custom rules on top of them) place frameless
//! memory; Mosaic's keep it in their `UNKNOWN`.

use crate::snapshot::{Action, Device, Snapshot};

use super::addr::AddrMap;
use super::stacks::StackInfo;

/// A stage of a training step, as the allocations with frames show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Forward,
    Backward,
    Step,
}

/// The category indices the rules place frameless memory in.
#[derive(Clone, Copy)]
struct Targets {
    activation: usize,
    gradient: usize,
    optimizer: usize,
}

impl Targets {
    fn stage(self, category: usize) -> Option<Stage> {
        if category == self.activation {
            Some(Stage::Forward)
        } else if category == self.gradient {
            Some(Stage::Backward)
        } else if category == self.optimizer {
            Some(Stage::Step)
        } else {
            None
        }
    }

    /// The rule table of the module comment: the category of a frameless
    /// allocation made in `made` and freed in `freed` (`None`: never freed).
    fn category(self, made: Option<Stage>, freed: Option<Option<Stage>>) -> Option<usize> {
        match (made?, freed) {
            (Stage::Backward, _) => Some(self.gradient),
            (Stage::Step, _) => Some(self.optimizer),
            (Stage::Forward, Some(Some(Stage::Forward | Stage::Backward))) => Some(self.activation),
            (Stage::Forward, _) => None,
        }
    }
}

/// The category of each frameless `alloc` of one device's trace that a
/// rule places, by entry index.
#[derive(Debug, Default)]
pub(crate) struct FramelessCategories {
    /// (entry, category), entries ascending.
    placed: Vec<(usize, usize)>,
}

impl FramelessCategories {
    /// The frameless allocations of `device` placed by phase and lifetime;
    /// none under rules without the default categories.
    pub(crate) fn new(snap: &Snapshot, device: Device, info: &mut StackInfo) -> Self {
        let rules = info.rules();
        let (Some(activation), Some(gradient), Some(optimizer)) = (
            rules.default_category("activation"),
            rules.default_category("gradient"),
            rules.default_category("optimizer-state"),
        ) else {
            return FramelessCategories::default();
        };
        let targets = Targets {
            activation,
            gradient,
            optimizer,
        };
        // Per frameless alloc: its entry, its stage, and the stage of its
        // free (outer `None`: not freed yet).
        let mut made: Vec<(usize, Option<Stage>, Option<Option<Stage>>)> = Vec::new();
        let mut open: AddrMap<usize> = AddrMap::default();
        let mut stage = None;
        for (i, e) in snap.trace(device).iter().enumerate() {
            match e.action() {
                Action::Alloc if info.frameless(e.stack) => {
                    open.insert(e.addr, made.len());
                    made.push((i, stage, None));
                }
                Action::Alloc => {
                    // Most traces have no frameless allocation: no hash
                    // per alloc then.
                    if !open.is_empty() {
                        open.remove(&e.addr);
                    }
                    stage = targets.stage(info.category(e.stack));
                }
                Action::FreeCompleted => {
                    if let Some(k) = open.remove(&e.addr) {
                        made[k].2 = Some(stage);
                    }
                }
                _ => {}
            }
        }
        let placed = made
            .into_iter()
            .filter_map(|(i, at, freed)| Some((i, targets.category(at, freed)?)))
            .collect();
        FramelessCategories { placed }
    }

    /// The category a rule gives the frameless `alloc` at entry `i`.
    pub(crate) fn get(&self, i: usize) -> Option<usize> {
        self.placed
            .binary_search_by_key(&i, |&(e, _)| e)
            .ok()
            .map(|k| self.placed[k].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Targets = Targets {
        activation: 3,
        gradient: 2,
        optimizer: 1,
    };

    #[test]
    fn made_in_backward_is_a_gradient_whether_or_not_it_lives_into_the_step() {
        let b = Some(Stage::Backward);
        assert_eq!(T.category(b, Some(Some(Stage::Step))), Some(2));
        assert_eq!(T.category(b, Some(b)), Some(2));
        assert_eq!(T.category(b, None), Some(2));
    }

    #[test]
    fn made_in_the_step_is_optimizer_state_and_made_in_forward_is_activation_until_backward_ends() {
        assert_eq!(T.category(Some(Stage::Step), None), Some(1));
        let f = Some(Stage::Forward);
        assert_eq!(T.category(f, Some(Some(Stage::Backward))), Some(3));
        assert_eq!(T.category(f, Some(f)), Some(3));
        assert_eq!(T.category(f, Some(Some(Stage::Step))), None);
        assert_eq!(T.category(f, None), None);
        assert_eq!(T.category(None, Some(f)), None);
    }
}

//! The box's one lock: its screen and browser have one holder at a time, a task or a person.
//!
//! A task takes it with its first screen or browser tool and keeps it until
//! `browser_release`, its turn ends (a question to the person, a verdict) or the task ends;
//! other tasks wait in a FIFO queue. A release hands the lock straight to the first in line,
//! so nobody can overtake. A person taking over preempts a task (which goes back to the head
//! of the queue) and holds the lock until they hand back; a person who took over for a task
//! that then runs again is done, so that task's next tool takes the lock back. A subagent may
//! take the lock from its parent (the parent handed it the screen: `computer_use`), and a
//! parent may look (`screenshot`) while its own subagent holds it.
//!
//! The state here is pure and synchronous: every change returns the `box_lock` events it
//! implies, which the caller appends to the tasks' threads. [`State::rebuild`] folds those
//! events back after a daemon restart.

use std::collections::VecDeque;

use lazyboy_protocol::{BoxHolder, BoxLockAction, EventBody};

use crate::store::TaskRow;

/// One holder, or one waiter.
#[derive(Debug, Clone)]
pub struct Entry {
    pub person: bool,
    /// The task (for a person: the task they took over for, if any).
    pub task: Option<TaskRow>,
    pub since_ms: i64,
    /// A person's hold that the task's next tool ends (`request_box_help`: the person's
    /// answer hands the box back); otherwise only a hand-back ends it.
    pub handoff: bool,
}

impl Entry {
    fn task_id(&self) -> Option<&str> {
        self.task.as_ref().map(|t| t.id.as_str())
    }

    fn is_task(&self, id: &str) -> bool {
        !self.person && self.task_id() == Some(id)
    }

    pub fn wire(&self) -> BoxHolder {
        BoxHolder {
            person: self.person,
            task: self.task.as_ref().map(|t| t.id.clone()),
            agent: self.task.as_ref().map(|t| t.agent.clone()),
            since_ms: self.since_ms,
        }
    }
}

/// An event for a task's thread.
pub type Record = (TaskRow, EventBody);

/// What [`State::take`] found.
#[derive(Debug)]
pub enum Take {
    /// The task holds the lock (it already did when `fresh` is false).
    Held { fresh: bool },
    /// The task waits in the queue.
    Waiting,
}

/// The lock's state.
#[derive(Debug, Default)]
pub struct State {
    pub holder: Option<Entry>,
    pub queue: VecDeque<Entry>,
}

fn event(entry: &Entry, action: BoxLockAction, holder: Option<BoxHolder>) -> Option<Record> {
    let task = entry.task.clone()?;
    let body = EventBody::BoxLock {
        action,
        agent: task.agent.clone(),
        task: task.id.clone(),
        person: entry.person,
        holder,
    };
    Some((task, body))
}

impl State {
    /// Takes the lock for `task` if it is free and nobody is ahead, else queues it. With
    /// `from_parent`, a lock held by the task's parent passes to it.
    pub fn take(&mut self, task: &TaskRow, from_parent: bool, now: i64) -> (Take, Vec<Record>) {
        let mut records = Vec::new();
        if let Some(holder) = &self.holder {
            if holder.is_task(&task.id) {
                return (Take::Held { fresh: false }, records);
            }
            let person_for_me =
                holder.person && holder.handoff && holder.task_id() == Some(task.id.as_str());
            let parent_holds = from_parent
                && !holder.person
                && task.parent_id.is_some()
                && holder.task_id() == task.parent_id.as_deref();
            if person_for_me || parent_holds {
                records.extend(event(holder, BoxLockAction::Released, None));
                self.holder = None;
                self.queue.retain(|e| !e.is_task(&task.id));
                return self.grant(task, now, records);
            }
        }
        let first = self.queue.front().is_none_or(|e| e.is_task(&task.id));
        if self.holder.is_none() && first {
            self.queue.retain(|e| !e.is_task(&task.id));
            return self.grant(task, now, records);
        }
        if !self.queue.iter().any(|e| e.is_task(&task.id)) {
            let entry = Entry {
                person: false,
                task: Some(task.clone()),
                since_ms: now,
                handoff: false,
            };
            let holder = self.holder.as_ref().map(Entry::wire);
            records.extend(event(&entry, BoxLockAction::Queued, holder));
            self.queue.push_back(entry);
        }
        (Take::Waiting, records)
    }

    fn grant(&mut self, task: &TaskRow, now: i64, mut records: Vec<Record>) -> (Take, Vec<Record>) {
        let entry = Entry {
            person: false,
            task: Some(task.clone()),
            since_ms: now,
            handoff: false,
        };
        records.extend(event(&entry, BoxLockAction::Acquired, None));
        self.holder = Some(entry);
        (Take::Held { fresh: true }, records)
    }

    /// Whether `task` may look at the screen without the lock: it or its own subagent holds
    /// it (a parent watching its `computer_use` subagent).
    pub fn may_look(&self, task: &TaskRow) -> bool {
        self.holder.as_ref().is_some_and(|h| {
            !h.person
                && h.task.as_ref().is_some_and(|t| {
                    t.id == task.id || t.parent_id.as_deref() == Some(task.id.as_str())
                })
        })
    }

    /// Releases `task`'s hold or its place in the queue; the first in line gets the lock.
    pub fn release(&mut self, task_id: &str, now: i64) -> Vec<Record> {
        let mut records = Vec::new();
        if let Some(at) = self.queue.iter().position(|e| e.is_task(task_id))
            && let Some(entry) = self.queue.remove(at)
        {
            records.extend(event(&entry, BoxLockAction::Released, None));
        }
        if self.holder.as_ref().is_some_and(|h| h.is_task(task_id)) {
            if let Some(holder) = self.holder.take() {
                records.extend(event(&holder, BoxLockAction::Released, None));
            }
            records.extend(self.hand_on(now));
        }
        records
    }

    /// The first in line takes the free lock.
    fn hand_on(&mut self, now: i64) -> Vec<Record> {
        if self.holder.is_some() {
            return Vec::new();
        }
        let Some(mut next) = self.queue.pop_front() else {
            return Vec::new();
        };
        next.since_ms = now;
        let records = event(&next, BoxLockAction::Acquired, None)
            .into_iter()
            .collect();
        self.holder = Some(next);
        records
    }

    /// A person takes over, for `task` when given, else for the task holding the lock. A task
    /// holding it goes back to the head of the queue, unless this is a `handoff` from that
    /// very task (`request_box_help`: its turn ends, and its next tool takes the box back).
    pub fn takeover(&mut self, task: Option<TaskRow>, handoff: bool, now: i64) -> Vec<Record> {
        let mut records = Vec::new();
        if self.holder.as_ref().is_some_and(|h| h.person) {
            return records;
        }
        let preempted = self.holder.take();
        let for_task = task.or_else(|| preempted.as_ref().and_then(|h| h.task.clone()));
        let person = Entry {
            person: true,
            task: for_task,
            since_ms: now,
            handoff,
        };
        if let Some(mut holder) = preempted {
            records.extend(event(&holder, BoxLockAction::Released, None));
            if !(handoff && holder.task_id() == person.task_id()) {
                holder.since_ms = now;
                records.extend(event(&holder, BoxLockAction::Queued, Some(person.wire())));
                self.queue.push_front(holder);
            }
        }
        records.extend(event(&person, BoxLockAction::Acquired, None));
        self.holder = Some(person);
        records
    }

    /// The person hands back; the first in line gets the lock. `false` if no person held it.
    pub fn handback(&mut self, now: i64) -> (bool, Vec<Record>) {
        if !self.holder.as_ref().is_some_and(|h| h.person) {
            return (false, Vec::new());
        }
        let mut records = Vec::new();
        if let Some(person) = self.holder.take() {
            records.extend(event(&person, BoxLockAction::Released, None));
        }
        records.extend(self.hand_on(now));
        (true, records)
    }

    /// Folds one recorded `box_lock` event (after a restart, in log order).
    pub fn replay(&mut self, task: TaskRow, action: BoxLockAction, person: bool, at_ms: i64) {
        // A person's hold for a task is most often its `request_box_help`.
        let entry = Entry {
            person,
            task: Some(task),
            since_ms: at_ms,
            handoff: person,
        };
        let id = entry.task_id().unwrap_or_default().to_owned();
        let same = |e: &Entry| e.person == person && e.task_id() == Some(id.as_str());
        match action {
            BoxLockAction::Acquired => {
                self.queue.retain(|e| !same(e));
                self.holder = Some(entry);
            }
            BoxLockAction::Queued => {
                if !self.queue.iter().any(same) {
                    self.queue.push_back(entry);
                }
            }
            BoxLockAction::Released => {
                self.queue.retain(|e| !same(e));
                if self.holder.as_ref().is_some_and(same) {
                    self.holder = None;
                }
            }
        }
    }

    /// After the replay: a holder whose task is no longer running is released (a person's
    /// hold lasts while the task they took over for still waits for them); nobody waits in
    /// the queue any more (the calls that waited were cut off by the restart and get an
    /// `unknown` result). `running(task)`, `waiting(task)` tell the tasks' states.
    pub fn settle(
        &mut self,
        running: impl Fn(&str) -> bool,
        waiting: impl Fn(&str) -> bool,
        now: i64,
    ) -> Vec<Record> {
        let mut records = Vec::new();
        for entry in self.queue.drain(..) {
            records.extend(event(&entry, BoxLockAction::Released, None));
        }
        let keep = self.holder.as_ref().is_some_and(|h| match h.task_id() {
            Some(id) if h.person => waiting(id) || running(id),
            Some(id) => running(id),
            None => h.person,
        });
        if !keep && let Some(holder) = self.holder.take() {
            records.extend(event(&holder, BoxLockAction::Released, None));
        }
        let _ = now;
        records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, agent: &str, parent: Option<&str>) -> TaskRow {
        TaskRow {
            id: id.into(),
            agent_id: 1,
            agent: agent.into(),
            instructions: String::new(),
            model: None,
            thread: format!("th-{id}"),
            objective: String::new(),
            workspace: String::new(),
            state: "running".into(),
            verdict: None,
            final_message: None,
            created_at_ms: 0,
            updated_at_ms: 0,
            parent_id: parent.map(str::to_owned),
            tools: None,
            heartbeat_at_ms: None,
            lease_expires_at_ms: None,
            sums: Default::default(),
            owner: None,
            mcp: String::new(),
        }
    }

    fn actions(records: &[Record]) -> Vec<(String, BoxLockAction, bool)> {
        records
            .iter()
            .map(|(t, body)| match body {
                EventBody::BoxLock { action, person, .. } => (t.id.clone(), *action, *person),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn first_come_first_served_and_release_hands_on() {
        let (a, b, c) = (
            task("a", "x", None),
            task("b", "y", None),
            task("c", "z", None),
        );
        let mut lock = State::default();
        let (take, records) = lock.take(&a, false, 1);
        assert!(matches!(take, Take::Held { fresh: true }));
        assert_eq!(
            actions(&records),
            [("a".into(), BoxLockAction::Acquired, false)]
        );
        assert!(matches!(
            lock.take(&a, false, 2).0,
            Take::Held { fresh: false }
        ));
        let (take, records) = lock.take(&b, false, 3);
        assert!(matches!(take, Take::Waiting));
        assert_eq!(
            actions(&records),
            [("b".into(), BoxLockAction::Queued, false)]
        );
        let (_, records) = lock.take(&b, false, 4);
        assert!(records.is_empty(), "queued once");
        lock.take(&c, false, 5);
        // C cannot overtake B even when the lock is momentarily free.
        let records = lock.release("a", 6);
        assert_eq!(
            actions(&records),
            [
                ("a".into(), BoxLockAction::Released, false),
                ("b".into(), BoxLockAction::Acquired, false)
            ]
        );
        assert!(matches!(lock.take(&c, false, 7).0, Take::Waiting));
        assert!(matches!(
            lock.take(&b, false, 7).0,
            Take::Held { fresh: false }
        ));
        // Leaving the queue is a release too.
        assert_eq!(
            actions(&lock.release("c", 8)),
            [("c".into(), BoxLockAction::Released, false)]
        );
        assert!(lock.queue.is_empty());
    }

    #[test]
    fn a_person_preempts_and_hands_back() {
        let (a, b) = (task("a", "x", None), task("b", "y", None));
        let mut lock = State::default();
        lock.take(&a, false, 1);
        lock.take(&b, false, 2);
        let records = lock.takeover(None, false, 3);
        assert_eq!(
            actions(&records),
            [
                ("a".into(), BoxLockAction::Released, false),
                ("a".into(), BoxLockAction::Queued, false),
                ("a".into(), BoxLockAction::Acquired, true)
            ]
        );
        assert!(lock.holder.as_ref().unwrap().person);
        assert_eq!(lock.queue.front().unwrap().task_id(), Some("a"));
        assert!(matches!(lock.take(&b, false, 4).0, Take::Waiting));
        let (was, records) = lock.handback(5);
        assert!(was);
        assert_eq!(
            actions(&records),
            [
                ("a".into(), BoxLockAction::Released, true),
                ("a".into(), BoxLockAction::Acquired, false)
            ]
        );
        assert!(!lock.handback(6).0);
    }

    #[test]
    fn the_task_a_person_helped_takes_the_lock_back() {
        let a = task("a", "x", None);
        let mut lock = State::default();
        lock.take(&a, false, 1);
        lock.release("a", 2);
        lock.takeover(Some(a.clone()), true, 3);
        let (take, records) = lock.take(&a, false, 4);
        assert!(matches!(take, Take::Held { fresh: true }));
        assert_eq!(
            actions(&records),
            [
                ("a".into(), BoxLockAction::Released, true),
                ("a".into(), BoxLockAction::Acquired, false)
            ]
        );
    }

    #[test]
    fn a_subagent_takes_the_lock_from_its_parent_and_the_parent_may_look() {
        let parent = task("p", "x", None);
        let child = task("k", "x", Some("p"));
        let other = task("o", "y", None);
        let mut lock = State::default();
        lock.take(&parent, false, 1);
        assert!(matches!(lock.take(&child, false, 2).0, Take::Waiting));
        lock.release("k", 2);
        assert!(matches!(
            lock.take(&child, true, 3).0,
            Take::Held { fresh: true }
        ));
        assert!(lock.may_look(&parent) && lock.may_look(&child) && !lock.may_look(&other));
        assert!(matches!(lock.take(&parent, true, 4).0, Take::Waiting));
    }

    #[test]
    fn after_a_restart_dead_holders_and_all_waiters_are_released() {
        let (a, b) = (task("a", "x", None), task("b", "y", None));
        let mut lock = State::default();
        lock.replay(a.clone(), BoxLockAction::Acquired, false, 1);
        lock.replay(b.clone(), BoxLockAction::Queued, false, 2);
        let records = lock.settle(|id| id == "a", |_| false, 3);
        assert_eq!(
            actions(&records),
            [("b".into(), BoxLockAction::Released, false)]
        );
        assert_eq!(lock.holder.as_ref().unwrap().task_id(), Some("a"));
        let records = lock.settle(|_| false, |_| false, 4);
        assert_eq!(
            actions(&records),
            [("a".into(), BoxLockAction::Released, false)]
        );
        // A person's hold lasts while the task they helped waits for them.
        lock.replay(a.clone(), BoxLockAction::Acquired, true, 5);
        assert!(lock.settle(|_| false, |id| id == "a", 6).is_empty());
        assert!(lock.holder.as_ref().unwrap().person);
        lock.replay(a, BoxLockAction::Released, true, 7);
        assert!(lock.holder.is_none());
    }
}

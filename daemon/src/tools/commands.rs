//! Running commands, by id. (Stub: being written.)

/// Every command the daemon started.
#[derive(Debug, Default)]
pub struct CommandRegistry {}

impl CommandRegistry {
    pub fn new() -> CommandRegistry {
        CommandRegistry::default()
    }
}

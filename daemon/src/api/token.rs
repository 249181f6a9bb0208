//! The API token while the daemon runs: the value every listener checks ([`Token`], through
//! `super::auth`) and the file in the home, changed together by `POST /api/daemon/token`, so
//! a rotated token takes effect at once and the old one (and every session cookie made from
//! it) is refused from the next request on.
//!
//! Rotations are serialized, so the file and the value in force never disagree. A token set
//! by `LAZYBOY_TOKEN` is not rotated here: the person's environment would bring it back at
//! the next start, so they change it there.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::home;

/// The token every request must prove; cloned handles share one value.
#[derive(Debug, Clone)]
pub struct Token(Arc<RwLock<Arc<str>>>);

impl Token {
    pub fn new(token: &str) -> Token {
        Token(Arc::new(RwLock::new(Arc::from(token))))
    }

    /// The token in force now.
    pub fn current(&self) -> Arc<str> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn replace(&self, token: &str) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::from(token);
    }
}

/// Why no token could be given.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(
        "the token comes from LAZYBOY_TOKEN in the daemon's environment: change it there and \
         restart the daemon"
    )]
    FromEnv,
    #[error("cannot write the token file: {0}")]
    Io(#[from] std::io::Error),
}

/// The owner of the token while the daemon runs.
#[derive(Debug)]
pub struct Tokens {
    home: PathBuf,
    /// The token in force, as the listeners check it.
    current: Token,
    serial: Mutex<()>,
}

impl Tokens {
    pub fn new(home: PathBuf, current: Token) -> Tokens {
        Tokens {
            home,
            current,
            serial: Mutex::new(()),
        }
    }

    /// The token in force, or with `rotate` a new one that replaces it in the file and in
    /// the listeners' checks. Blocking (file IO).
    pub fn get(&self, rotate: bool) -> Result<String, TokenError> {
        let _serial = self.serial.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(token) = home::token_from_env() {
            return if rotate {
                Err(TokenError::FromEnv)
            } else {
                Ok(token)
            };
        }
        if !rotate {
            return Ok(self.current.current().to_string());
        }
        let token = home::write_new_token(&self.home)?;
        self.current.replace(&token);
        tracing::info!(rotate, "a new API token was written");
        Ok(token)
    }
}

//! The daemon's VAPID key pair (RFC 8292): made once, its private half kept in
//! `<home>/vapid_key` (mode 0600, like the token; never in the database, the log, an event or
//! `/api/state`), and the `Authorization: vapid t=<JWT>, k=<key>` header each push carries.
//!
//! The key is ring's ECDSA P-256 (PKCS#8 on disk, base64url), the same crypto library the
//! daemon links for TLS. `Debug` shows only the public half.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};

/// The file in the home that holds the private key.
pub const KEY_FILE: &str = "vapid_key";

/// How long a signed token is good for (RFC 8292 allows up to 24 h).
const TOKEN_TTL_SECS: i64 = 12 * 3600;

#[derive(Debug, thiserror::Error)]
pub enum VapidError {
    #[error("cannot read or write {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{0} does not hold a P-256 key; move it aside to make a new one")]
    Invalid(String),
    #[error("signing failed")]
    Sign,
}

/// The key pair.
pub struct Vapid {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
    /// `k=` of the header, and what `GET /api/notify/vapid` answers.
    public: String,
}

impl std::fmt::Debug for Vapid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vapid")
            .field("public", &self.public)
            .finish()
    }
}

impl Vapid {
    /// The home's key pair, made (and written, 0600) if the home has none.
    pub fn load_or_create(home: &Path) -> Result<Vapid, VapidError> {
        let path = home.join(KEY_FILE);
        let io = |source| VapidError::Io {
            path: path.display().to_string(),
            source,
        };
        let rng = SystemRandom::new();
        let pkcs8 = match std::fs::read_to_string(&path) {
            Ok(text) => URL_SAFE_NO_PAD
                .decode(text.trim())
                .map_err(|_| VapidError::Invalid(path.display().to_string()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let made = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                    .map_err(|_| VapidError::Sign)?;
                write_private(home, made.as_ref()).map_err(io)?;
                made.as_ref().to_vec()
            }
            Err(e) => return Err(io(e)),
        };
        // The one registry of what the daemon redacts: the key as its file holds it, so a
        // stray copy (a tool result, an error) is hidden like the token.
        crate::redact::register("vapid_key", &URL_SAFE_NO_PAD.encode(&pkcs8));
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng)
            .map_err(|_| VapidError::Invalid(path.display().to_string()))?;
        let public = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        Ok(Vapid { pair, rng, public })
    }

    /// The public key, base64url (the uncompressed point).
    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header for a push to `origin` (the endpoint's scheme and host),
    /// signed now, naming `subject` (`mailto:` or `https:`) as the contact.
    pub fn authorization(
        &self,
        origin: &str,
        subject: &str,
        now_secs: i64,
    ) -> Result<String, VapidError> {
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({
            "aud": origin,
            "exp": now_secs + TOKEN_TTL_SECS,
            "sub": subject,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signing_input = format!("{header}.{claims}");
        let signature = self
            .pair
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|_| VapidError::Sign)?;
        let signature = URL_SAFE_NO_PAD.encode(signature.as_ref());
        Ok(format!(
            "vapid t={signing_input}.{signature}, k={}",
            self.public
        ))
    }
}

/// Writes the key through a fresh 0600 file renamed into place, so a reader never sees half
/// of one and a crash never leaves a readable copy behind.
fn write_private(home: &Path, pkcs8: &[u8]) -> std::io::Result<()> {
    let staged = home.join(format!(".{KEY_FILE}.new"));
    if let Err(e) = std::fs::remove_file(&staged)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        return Err(e);
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&staged)?;
    writeln!(file, "{}", URL_SAFE_NO_PAD.encode(pkcs8))?;
    file.sync_all()?;
    std::fs::rename(&staged, home.join(KEY_FILE))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    use super::*;

    #[test]
    fn the_key_is_made_once_privately_and_signs_tokens_its_public_half_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let first = Vapid::load_or_create(dir.path()).unwrap();
        let again = Vapid::load_or_create(dir.path()).unwrap();
        assert_eq!(first.public_key(), again.public_key());
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(
            !format!("{first:?}").contains(
                std::fs::read_to_string(dir.path().join(KEY_FILE))
                    .unwrap()
                    .trim()
            )
        );

        let header = first
            .authorization("https://push.example", "mailto:me@example.com", 1_000)
            .unwrap();
        let (token, key) = header
            .strip_prefix("vapid t=")
            .unwrap()
            .split_once(", k=")
            .unwrap();
        assert_eq!(key, first.public_key());
        let (signed, signature) = token.rsplit_once('.').unwrap();
        let public = URL_SAFE_NO_PAD.decode(key).unwrap();
        assert_eq!(public.len(), 65);
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
            .verify(
                signed.as_bytes(),
                &URL_SAFE_NO_PAD.decode(signature).unwrap(),
            )
            .unwrap();
        let claims = signed.split_once('.').unwrap().1;
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
        assert_eq!(claims["aud"], "https://push.example");
        assert_eq!(claims["exp"], 1_000 + TOKEN_TTL_SECS);
        assert_eq!(claims["sub"], "mailto:me@example.com");
    }
}

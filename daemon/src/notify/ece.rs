//! Web Push's payload encryption (RFC 8291, `aes128gcm` of RFC 8188) over ring, the crypto
//! library the daemon already links for TLS: an ephemeral P-256 key agreed with the
//! browser's `p256dh` key, keys derived with the browser's `auth` secret, one AES-128-GCM
//! record. A fresh key pair and salt per message, so nothing here is kept between sends.
//!
//! `seal` is the deterministic part (everything after the agreement), tested against the
//! RFC's worked example; `encrypt` adds the ephemeral key and the random salt.

use ring::rand::{SecureRandom, SystemRandom};
use ring::{aead, agreement, hmac};

/// The record size written in the header: one record holds any payload under it.
const RECORD_SIZE: u32 = 4096;
/// The largest plaintext one record holds (the delimiter and the tag take 17 bytes).
pub const MAX_PLAINTEXT: usize = RECORD_SIZE as usize - 17;

/// Why a message could not be encrypted for a subscription.
#[derive(Debug, thiserror::Error)]
pub enum EceError {
    #[error("the subscription's p256dh key is not an uncompressed P-256 point")]
    BadPublicKey,
    #[error("the subscription's auth secret is not 16 bytes")]
    BadAuth,
    #[error("the message is over {MAX_PLAINTEXT} bytes")]
    TooLong,
    #[error("the system's random generator or the key agreement failed")]
    Crypto,
}

/// `plaintext` encrypted for the browser whose keys are `ua_public` (65 bytes) and `auth`
/// (16 bytes): the request body, header included.
pub fn encrypt(plaintext: &[u8], ua_public: &[u8], auth: &[u8]) -> Result<Vec<u8>, EceError> {
    check(plaintext, ua_public, auth)?;
    let rng = SystemRandom::new();
    let mut salt = [0u8; 16];
    rng.fill(&mut salt).map_err(|_| EceError::Crypto)?;
    let private = agreement::EphemeralPrivateKey::generate(&agreement::ECDH_P256, &rng)
        .map_err(|_| EceError::Crypto)?;
    let as_public = private.compute_public_key().map_err(|_| EceError::Crypto)?;
    let peer = agreement::UnparsedPublicKey::new(&agreement::ECDH_P256, ua_public);
    let secret = agreement::agree_ephemeral(private, &peer, |secret| secret.to_vec())
        .map_err(|_| EceError::BadPublicKey)?;
    seal(
        &secret,
        auth,
        ua_public,
        as_public.as_ref(),
        &salt,
        plaintext,
    )
}

fn check(plaintext: &[u8], ua_public: &[u8], auth: &[u8]) -> Result<(), EceError> {
    if ua_public.len() != 65 || ua_public[0] != 4 {
        return Err(EceError::BadPublicKey);
    }
    if auth.len() != 16 {
        return Err(EceError::BadAuth);
    }
    if plaintext.len() > MAX_PLAINTEXT {
        return Err(EceError::TooLong);
    }
    Ok(())
}

/// HMAC-SHA-256, as RFC 5869's extract and (one block of) expand are written.
fn hmac(key: &[u8], parts: &[&[u8]]) -> hmac::Tag {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    let mut context = hmac::Context::with_key(&key);
    for part in parts {
        context.update(part);
    }
    context.sign()
}

/// RFC 8291 section 3.4 and RFC 8188 section 2, given the agreed secret.
pub fn seal(
    ecdh_secret: &[u8],
    auth: &[u8],
    ua_public: &[u8],
    as_public: &[u8],
    salt: &[u8; 16],
    plaintext: &[u8],
) -> Result<Vec<u8>, EceError> {
    check(plaintext, ua_public, auth)?;
    // IKM = HKDF(auth, ecdh_secret, "WebPush: info\0" || ua_public || as_public, 32)
    let prk_key = hmac(auth, &[ecdh_secret]);
    let ikm = hmac(
        prk_key.as_ref(),
        &[b"WebPush: info\0", ua_public, as_public, &[1]],
    );
    let prk = hmac(salt, &[ikm.as_ref()]);
    let cek = hmac(prk.as_ref(), &[b"Content-Encoding: aes128gcm\0", &[1]]);
    let nonce = hmac(prk.as_ref(), &[b"Content-Encoding: nonce\0", &[1]]);
    let key = aead::UnboundKey::new(&aead::AES_128_GCM, &cek.as_ref()[..16])
        .map_err(|_| EceError::Crypto)?;
    let key = aead::LessSafeKey::new(key);
    let nonce = aead::Nonce::try_assume_unique_for_key(&nonce.as_ref()[..12])
        .map_err(|_| EceError::Crypto)?;
    // One record, the last: the plaintext, then the delimiter 0x02, no padding.
    let mut record = Vec::with_capacity(plaintext.len() + 17);
    record.extend_from_slice(plaintext);
    record.push(2);
    key.seal_in_place_append_tag(nonce, aead::Aad::empty(), &mut record)
        .map_err(|_| EceError::Crypto)?;
    let mut body = Vec::with_capacity(16 + 4 + 1 + as_public.len() + record.len());
    body.extend_from_slice(salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(as_public.len() as u8);
    body.extend_from_slice(as_public);
    body.extend_from_slice(&record);
    Ok(body)
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    use super::*;

    fn b64(text: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(text).unwrap()
    }

    /// RFC 8291 Appendix A: the worked example, byte for byte.
    #[test]
    fn the_rfc_example_encrypts_to_the_rfcs_bytes() {
        let salt: [u8; 16] = b64("DGv6ra1nlYgDCS1FRnbzlw").try_into().unwrap();
        let body = seal(
            &b64("kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs"),
            &b64("BTBZMqHH6r4Tts7J_aSIgg"),
            &b64(
                "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
            ),
            &b64(
                "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8",
            ),
            &salt,
            b"When I grow up, I want to be a watermelon",
        )
        .unwrap();
        let expected = concat!(
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIg",
            "Dll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVB",
            "St2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
        );
        assert_eq!(URL_SAFE_NO_PAD.encode(body), expected);
    }

    #[test]
    fn bad_keys_and_long_messages_are_refused() {
        let key = [4u8; 65];
        assert!(matches!(
            encrypt(b"x", &key[..64], &[0; 16]),
            Err(EceError::BadPublicKey)
        ));
        assert!(matches!(
            encrypt(b"x", &key, &[0; 15]),
            Err(EceError::BadAuth)
        ));
        assert!(matches!(
            encrypt(&vec![0; MAX_PLAINTEXT + 1], &key, &[0; 16]),
            Err(EceError::TooLong)
        ));
        // Not a point on the curve: the agreement refuses it.
        assert!(matches!(
            encrypt(b"x", &key, &[0; 16]),
            Err(EceError::BadPublicKey)
        ));
    }
}

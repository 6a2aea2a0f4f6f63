//! Proving knowledge of the cluster's shared secret without sending it: the side that accepts
//! a connection sends a fresh random nonce, the side that connected answers with the
//! HMAC-SHA256 of the nonce under the secret, and the acceptor checks it in constant time. A
//! process without a secret answers with an empty proof, which only a process without a
//! secret accepts.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Bytes of a nonce.
pub const NONCE_LEN: usize = 32;

/// The proof of knowing `secret` for `nonce`: empty without a secret.
pub fn proof(secret: Option<&[u8]>, nonce: &[u8]) -> Vec<u8> {
    let Some(secret) = secret else {
        return Vec::new();
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(nonce);
    mac.finalize().into_bytes().to_vec()
}

/// Whether `proof` proves knowing `secret` for `nonce` (anything goes without a secret).
pub fn verify(secret: Option<&[u8]>, nonce: &[u8], proof: &[u8]) -> bool {
    let Some(secret) = secret else {
        return true;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(nonce);
    mac.verify_slice(proof).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_secret_proves_the_secret() {
        let nonce = [7u8; NONCE_LEN];
        let p = proof(Some(b"s3cret"), &nonce);
        assert!(verify(Some(b"s3cret"), &nonce, &p));
        assert!(!verify(Some(b"other"), &nonce, &p));
        assert!(!verify(Some(b"s3cret"), &[8u8; NONCE_LEN], &p));
        assert!(!verify(Some(b"s3cret"), &nonce, &[]));
        assert!(!verify(Some(b"s3cret"), &nonce, &proof(None, &nonce)));
        assert!(verify(None, &nonce, &[]));
    }
}

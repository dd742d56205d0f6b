//! Password hashing (argon2id) and Inmanta's password policy.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

use crate::{Error, Result};

/// Length 12..=128 and at least three of: lower case, upper case, digit, other.
pub fn check_policy(password: &str) -> Result<()> {
    let length = password.chars().count();
    if !(12..=128).contains(&length) {
        return Err(Error::BadRequest(format!(
            "the password must be 12 to 128 characters long (this one has {length})"
        )));
    }
    let classes = [
        password.chars().any(|c| c.is_lowercase()),
        password.chars().any(|c| c.is_uppercase()),
        password.chars().any(|c| c.is_ascii_digit()),
        password.chars().any(|c| !c.is_alphanumeric()),
    ];
    if classes.iter().filter(|c| **c).count() < 3 {
        return Err(Error::BadRequest(
            "the password must mix at least three of: lower case, upper case, digits, other characters".into(),
        ));
    }
    Ok(())
}

pub fn hash(password: &str) -> Result<String> {
    let salt = SaltString::encode_b64(&random_bytes::<16>()).map_err(|e| Error::Corrupt(format!("salt: {e}")))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| Error::Corrupt(format!("cannot hash the password: {e}")))
}

/// Whether `password` matches a stored hash. A corrupt hash never matches.
pub fn verify(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

/// A password that satisfies the policy, for the generated first admin.
pub fn generate() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    let bytes = random_bytes::<20>();
    let body: String = bytes.iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect();
    // Fixed classes at the end keep the policy satisfied whatever the random part holds.
    format!("{body}-Aa7")
}

pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the operating system's random source works");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy() {
        assert!(check_policy("short1A!").is_err());
        assert!(check_policy("alllowercaseletters").is_err());
        assert!(check_policy("lowerUPPER1234").is_ok());
        assert!(check_policy(&"aA1".repeat(50)).is_err());
        assert!(check_policy(&generate()).is_ok());
    }

    #[test]
    fn hashes_are_argon2id_and_salted() {
        let a = hash("correct horse Battery 1").unwrap();
        let b = hash("correct horse Battery 1").unwrap();
        assert!(a.starts_with("$argon2id$"));
        assert_ne!(a, b);
        assert!(verify("correct horse Battery 1", &a));
        assert!(!verify("correct horse Battery 2", &a));
        assert!(!verify("anything", "not a hash"));
    }
}

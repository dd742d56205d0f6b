//! xorshift64*: enough randomness for fault points, and reproducible from a printed seed.

pub struct Rng(pub u64);

impl Rng {
    /// The seed from the variable `name`, or one from the clock (printed by the caller).
    pub fn seed_from(name: &str) -> u64 {
        std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
                | 1
        })
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

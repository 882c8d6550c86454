//! Spark's hash partitioning, which places the rows of a multi-part checkpoint in their parts
//! (spec "Multi-part checkpoint": parts MUST be clustered by spark-style hash partitioning, the
//! key being the path, and with deletion vectors the path and the deletion vector id).
//!
//! Spark's `HashPartitioning` computes `pmod(murmur3(key columns, seed 42), parts)`, where a
//! string is hashed by `Murmur3_x86_32.hashUnsafeBytes` (four-byte little-endian words, then
//! each remaining byte as a sign-extended word of its own), a null leaves the running hash
//! unchanged, and the hash of each column seeds the next.

/// Spark's seed for `hash()` and hash partitioning.
const SEED: u32 = 42;

/// The 0-based part of a row with `path` and, when the table uses deletion vectors, the
/// deletion vector id `dv_id`; a row without a path (a non-file action) hashes as nulls.
pub(crate) fn part_of(path: Option<&str>, dv_id: Option<&str>, num_parts: u32) -> u32 {
    let mut hash = SEED;
    for value in [path, dv_id].into_iter().flatten() {
        hash = hash_unsafe_bytes(value.as_bytes(), hash);
    }
    pmod(hash as i32, num_parts)
}

/// `pmod(hash, n)`: the non-negative remainder.
fn pmod(hash: i32, n: u32) -> u32 {
    let n = i64::from(n.max(1));
    (i64::from(hash).rem_euclid(n)) as u32
}

/// Spark's `Murmur3_x86_32.hashUnsafeBytes`.
fn hash_unsafe_bytes(bytes: &[u8], seed: u32) -> u32 {
    let aligned = bytes.len() - bytes.len() % 4;
    let mut h1 = seed;
    for word in bytes[..aligned].chunks_exact(4) {
        let k1 = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        h1 = mix_h1(h1, mix_k1(k1));
    }
    for byte in &bytes[aligned..] {
        let k1 = i32::from(*byte as i8) as u32;
        h1 = mix_h1(h1, mix_k1(k1));
    }
    fmix(h1, bytes.len() as u32)
}

fn mix_k1(k1: u32) -> u32 {
    k1.wrapping_mul(0xcc9e_2d51)
        .rotate_left(15)
        .wrapping_mul(0x1b87_3593)
}

fn mix_h1(h1: u32, k1: u32) -> u32 {
    (h1 ^ k1)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

fn fmix(h1: u32, length: u32) -> u32 {
    let mut h = h1 ^ length;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_spark_hash_of_strings() {
        // The values Spark 4.2 gives for SELECT hash(...).
        assert_eq!(hash_unsafe_bytes(b"Spark", SEED) as i32, 228093765);
        assert_eq!(hash_unsafe_bytes(b"", SEED) as i32, 142593372);
        assert_eq!(hash_unsafe_bytes(b"abc", SEED) as i32, 1322437556);
        assert_eq!(hash_unsafe_bytes(b"a.parquet", SEED) as i32, -1576595922);
        // Spark: pmod(hash('part-00000-x.parquet'), 3) = 2
        assert_eq!(part_of(Some("part-00000-x.parquet"), None, 3), 2);
    }

    #[test]
    fn null_keys_hash_to_the_seed() {
        assert_eq!(part_of(None, None, 5), 42 % 5);
        assert!(part_of(Some("a.parquet"), None, 3) < 3);
    }
}

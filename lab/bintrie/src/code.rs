//! Code chunking: 31 code bytes per 32-byte leaf, behind one byte counting the leading
//! bytes that are PUSH data of an instruction in an earlier chunk.

/// Code bytes per chunk.
pub const CHUNK_CODE_BYTES: usize = 31;

const PUSH1: u8 = 0x60;
const PUSH32: u8 = 0x7f;

/// The chunks of `code`: byte 0 of chunk `i` is how many of its code bytes (capped at 31)
/// are data of a PUSH that starts before it; bytes 1..32 are `code[31 * i..31 * (i + 1)]`,
/// the last chunk zero-padded. A PUSH truncated by the end of the code counts its missing
/// bytes as data, as if the code were padded with zeros.
pub fn chunkify_code(code: &[u8]) -> Vec<[u8; 32]> {
    let mut chunks = Vec::with_capacity(code.len().div_ceil(CHUNK_CODE_BYTES));
    // Offset of the next instruction (not PUSH data) at or after the current position.
    let mut next_instruction = 0usize;
    for (index, piece) in code.chunks(CHUNK_CODE_BYTES).enumerate() {
        let start = index * CHUNK_CODE_BYTES;
        let end = start + piece.len();
        let mut chunk = [0u8; 32];
        chunk[0] = next_instruction.saturating_sub(start).min(CHUNK_CODE_BYTES) as u8;
        chunk[1..=piece.len()].copy_from_slice(piece);
        while next_instruction < end {
            let op = code[next_instruction];
            next_instruction += 1;
            if (PUSH1..=PUSH32).contains(&op) {
                next_instruction += usize::from(op - PUSH1 + 1);
            }
        }
        chunks.push(chunk);
    }
    chunks
}

/// Code from its chunks: the code bytes of each chunk, truncated to `code_size`.
pub fn unchunkify_code(chunks: &[[u8; 32]], code_size: usize) -> Vec<u8> {
    let mut code: Vec<u8> = chunks.iter().flat_map(|chunk| chunk[1..].iter().copied()).collect();
    code.truncate(code_size);
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_code_has_no_chunks() {
        assert!(chunkify_code(&[]).is_empty());
    }

    #[test]
    fn short_code_is_one_padded_chunk() {
        let chunks = chunkify_code(&[0x60, 0x01, 0x00]);
        assert_eq!(chunks.len(), 1);
        assert_eq!(&chunks[0][..4], &[0, 0x60, 0x01, 0x00]);
        assert!(chunks[0][4..].iter().all(|b| *b == 0));
    }

    #[test]
    fn push_data_crossing_chunks() {
        // PUSH32 at offset 30: one data byte in chunk 0, 31 in chunk 1, the last in chunk 2.
        let mut code = vec![0x5b; 30];
        code.push(PUSH32);
        code.extend([0xaa; 32]);
        code.extend([0x00; 10]);
        let chunks = chunkify_code(&code);
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks.iter().map(|c| c[0]).collect::<Vec<_>>(), [0, 31, 1]);
        assert_eq!(unchunkify_code(&chunks, code.len()), code);
    }

    #[test]
    fn push_ending_exactly_at_chunk_end() {
        // PUSH4 at offset 26: data 27..=30, the last byte of chunk 0.
        let mut code = vec![0x00; 26];
        code.push(0x63);
        code.extend([0xbb; 4]);
        code.extend([0x60, 0x01]);
        let chunks = chunkify_code(&code);
        assert_eq!(chunks.iter().map(|c| c[0]).collect::<Vec<_>>(), [0, 0]);
    }

    #[test]
    fn push_data_of_the_eip_example() {
        // "...PUSH4 99 98 | 97 96 PUSH1 128 MSTORE..." -> the second chunk starts with 2.
        let mut code = vec![0x00; 28];
        code.extend([0x63, 99, 98, 97, 96, 0x60, 128, 0x52]);
        let chunks = chunkify_code(&code);
        assert_eq!(chunks[1][0], 2);
        assert_eq!(&chunks[1][1..6], &[97, 96, 0x60, 128, 0x52]);
    }
}

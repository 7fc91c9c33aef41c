//! The fw_cfg files a QEMU host hands its firmware, read back by the guest
//! through the kernel's `qemu_fw_cfg` driver
//! (`/sys/firmware/qemu_fw_cfg/by_name/NAME/raw`, the bytes as QEMU stores
//! them; kernel Documentation/ABI/testing/sysfs-firmware-qemu_fw_cfg). Each
//! is parsed the way the firmware that takes it does, so that a value the
//! firmware would refuse is not taken for one it used.

use crate::model::fw_cfg::{E820Entry, MMIO64_MAX_MB};

/// `opt/ovmf/X-PciMmio64Mb`: OVMF's 64-bit aperture in MiB, as OVMF reads
/// it (OvmfPkg/Library/PlatformInitLib/MemDetect.c, edk2-stable202505,
/// `QemuFwCfgParseUint32 ("opt/ovmf/X-PciMmio64Mb", FALSE, ...)`, taken only
/// up to 0x1000000 MiB, 16 TiB), through QemuFwCfgSimpleParserLib
/// (QemuFwCfgParseUint64WithLimit): at most 23 bytes, or 24 when the last
/// is a NUL; one trailing `\n` or `\r\n` dropped; then BaseLib's
/// AsciiStrDecimalToUint64S (MdePkg/Library/BaseLib/SafeString.c): blanks
/// and tabs, then zeros, skipped; decimal digits to the first NUL; nothing
/// after them. So `" 64"` is 64 and `"   "` is 0, as OVMF has it; `"0x40"`
/// and `"64 MiB"` are refused. Err: why OVMF ignores the file.
pub(crate) fn ovmf_mmio64_mb(raw: &[u8]) -> Result<u64, String> {
    // UINT64_STRING_MAX_SIZE (21, with its NUL) + CRLF_LENGTH (2), and a
    // NUL appended when the file has none.
    const BUFFER: usize = 23;
    if raw.len() > BUFFER || (raw.len() == BUFFER && raw.last() != Some(&0)) {
        return Err(format!(
            "{} bytes, more than OVMF reads for a number",
            raw.len()
        ));
    }
    let mut s = raw.strip_suffix(&[0]).unwrap_or(raw);
    s = s
        .strip_suffix(b"\r\n")
        .or_else(|| s.strip_suffix(b"\n"))
        .unwrap_or(s);
    // A C string: it ends at the first NUL.
    let s = s.split(|&b| b == 0).next().unwrap_or_default();
    let after_blanks = s.iter().position(|&b| b != b' ' && b != b'\t');
    let digits = match after_blanks {
        None if s.is_empty() => return Err("empty".into()),
        // Blanks only: the scan ends past them, at the NUL: 0.
        None => &s[s.len()..],
        Some(i) => &s[i..],
    };
    let zeros = digits.iter().take_while(|&&b| b == b'0').count();
    let rest = &digits[zeros..];
    let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if n < rest.len() {
        return Err(format!(
            "{:?} is not a decimal number of MiB",
            String::from_utf8_lossy(s)
        ));
    }
    let mut v: u64 = 0;
    for &b in &rest[..n] {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or_else(|| "too large for OVMF's 32-bit value".to_string())?;
    }
    if v > u64::from(u32::MAX) {
        return Err("too large for OVMF's 32-bit value".into());
    }
    if v > MMIO64_MAX_MB {
        return Err(format!(
            "{v} MiB, more than the 16 TiB ({MMIO64_MAX_MB} MiB) OVMF takes"
        ));
    }
    Ok(v)
}

/// `opt/org.seabios/pci64`: SeaBIOS 1.17.0's switch for its 64-bit window
/// (pad mode and the top of the address space), read with
/// `romfile_loadbool` (src/romfile.c, rel-1.17.0): the file's text up to
/// its first NUL, exactly `1`, `on`, `yes` or `0`, `off`, `no`. `None`:
/// anything else, which SeaBIOS takes as not set.
pub(crate) fn seabios_pci64(raw: &[u8]) -> Option<bool> {
    let s = raw.split(|&b| b == 0).next().unwrap_or_default();
    crate::parse::qemu_args::seabios_bool(std::str::from_utf8(s).ok()?)
}

/// `etc/reserved-memory-end`: where QEMU's memory hot-plug area ends, a
/// little-endian 64-bit address (hw/i386/pc.c, pc_memory_init, v7.2.0:
/// `cpu_to_le64(ROUND_UP(res_mem_end, 1 * GiB))`, present only with
/// hot-plug memory). OVMF and SeaBIOS start the 64-bit window above it.
pub(crate) fn reserved_memory_end(raw: &[u8]) -> Result<u64, String> {
    let b: [u8; 8] = raw
        .try_into()
        .map_err(|_| format!("{} bytes, not the 8 of a 64-bit address", raw.len()))?;
    Ok(u64::from_le_bytes(b))
}

/// `etc/e820`: QEMU's memory map for the firmware, packed little-endian
/// entries of 20 bytes (hw/i386/e820_memory_layout.h, `struct e820_entry`:
/// address, length, type). The RAM the firmware sizes its window from,
/// which a guest booted with `mem=` does not show in its own map.
pub(crate) fn e820(raw: &[u8]) -> Result<Vec<E820Entry>, String> {
    if raw.is_empty() || raw.len() % 20 != 0 {
        return Err(format!(
            "{} bytes, not a whole number of 20-byte entries",
            raw.len()
        ));
    }
    let u64_at = |c: &[u8], i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&c[i..i + 8]);
        u64::from_le_bytes(b)
    };
    Ok(raw
        .chunks_exact(20)
        .map(|c| E820Entry {
            start: u64_at(c, 0),
            length: u64_at(c, 8),
            kind: u32::from_le_bytes([c[16], c[17], c[18], c[19]]),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x_pci_mmio64_mb_as_ovmf_reads_it() {
        let ok: &[(&[u8], u64)] = &[
            (b"65536", 65536),
            (b"65536\n", 65536),
            (b"65536\r\n", 65536),
            (b"65536\0", 65536),
            (b"65536\n\0", 65536),
            (b" \t065536", 65536),
            (b"0", 0),
            (b"000", 0),
            // BaseLib's scan ends past the blanks, at the NUL.
            (b"   ", 0),
            (b"32768\0junk", 32768),
            (b"16777216", MMIO64_MAX_MB),
            (b"0000000000000000000001", 1),
        ];
        for (raw, want) in ok {
            assert_eq!(ovmf_mmio64_mb(raw), Ok(*want), "{raw:?}");
        }
        let refused: &[&[u8]] = &[
            b"",
            b"\n",
            b"0x10000",
            b"64 MiB",
            b"-1",
            b"+5",
            b"5 ",
            b"5\n\n",
            b"abc",
            // Past 16 TiB, past 32 bits, past 64 bits.
            b"16777217",
            b"4294967296",
            b"99999999999999999999",
            // Longer than OVMF's buffer.
            b"00000000000000000000001",
        ];
        for raw in refused {
            assert!(ovmf_mmio64_mb(raw).is_err(), "{raw:?}");
        }
        // 23 bytes with a NUL at the end still fit.
        assert_eq!(ovmf_mmio64_mb(b"0000000000000000000001\0"), Ok(1));
    }

    #[test]
    fn seabios_pci64_takes_its_six_words_only() {
        for (raw, want) in [
            (&b"1"[..], Some(true)),
            (b"on", Some(true)),
            (b"yes\0", Some(true)),
            (b"0", Some(false)),
            (b"off", Some(false)),
            (b"no", Some(false)),
            (b"true", None),
            (b"yes\n", None),
            (b"", None),
            (b"\xff", None),
        ] {
            assert_eq!(seabios_pci64(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn reserved_memory_end_and_e820_are_little_endian_binary() {
        assert_eq!(
            reserved_memory_end(&0x80_0000_0000u64.to_le_bytes()),
            Ok(0x80_0000_0000)
        );
        assert!(reserved_memory_end(b"1234").is_err());
        // QEMU's map for 1 GiB on q35: RAM below 640 KiB... as one entry
        // from 0, then nothing above 4 GiB.
        let mut raw = Vec::new();
        for (start, length, kind) in [
            (0u64, 0x4000_0000u64, 1u32),
            (0x1_0000_0000, 0x8000_0000, 1),
        ] {
            raw.extend_from_slice(&start.to_le_bytes());
            raw.extend_from_slice(&length.to_le_bytes());
            raw.extend_from_slice(&kind.to_le_bytes());
        }
        let e = e820(&raw).unwrap();
        assert_eq!(
            e,
            vec![
                E820Entry {
                    start: 0,
                    length: 0x4000_0000,
                    kind: 1
                },
                E820Entry {
                    start: 0x1_0000_0000,
                    length: 0x8000_0000,
                    kind: 1
                }
            ]
        );
        assert!(e820(&raw[..39]).is_err());
        assert!(e820(b"").is_err());
    }
}

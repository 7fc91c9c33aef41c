//! What pasted text says of peer-to-peer, for `explain`: `nvidia-smi topo
//! -m` (the PCI path between GPUs, NCCL's names), `nvidia-smi topo -p2p r`
//! (the driver's answer: `OK`, `NS`...), NCCL `INFO` lines (the transport
//! each channel took, the level set), and QEMU's warning that it could not
//! map a peer's BARs for DMA.

use crate::model::p2p::PathLevel;

/// Everything found; empty when the text says nothing of P2P.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct P2pText {
    /// (row GPU, column GPU, level) from a `topo -m` matrix; NVLink cells
    /// (`NV#`) are left out: not a PCI path.
    pub paths: Vec<(u32, u32, PathLevel)>,
    /// (row GPU, column GPU, the driver said OK) from `topo -p2p r`.
    pub p2p_read: Vec<(u32, u32, bool)>,
    /// NCCL channels connected `via P2P/...`.
    pub nccl_p2p: usize,
    /// NCCL channels connected `via SHM/...` (through host memory).
    pub nccl_shm: usize,
    /// `NCCL_P2P_LEVEL set by environment to X`.
    pub nccl_level: Option<String>,
    /// QEMU: "PCI peer-to-peer transactions on BARs are not supported".
    pub qemu_bar_warning: bool,
}

impl P2pText {
    pub(crate) fn is_empty(&self) -> bool {
        *self == P2pText::default()
    }
}

/// `GPU3` -> 3.
fn gpu_index(w: &str) -> Option<u32> {
    w.strip_prefix("GPU")?.parse().ok()
}

pub(crate) fn parse(text: &str) -> P2pText {
    let mut out = P2pText::default();
    // The column header of the matrix being read: its GPU indices.
    let mut header: Vec<u32> = Vec::new();
    for raw in text.lines() {
        let line = raw.trim_end_matches('\r');
        if line.contains("PCI peer-to-peer transactions on BARs are not supported") {
            out.qemu_bar_warning = true;
        }
        if line.contains("NCCL INFO") || line.contains("NCCL WARN") {
            if let Some(i) = line.find(" via ") {
                let t = &line[i + 5..];
                if t.starts_with("P2P") {
                    out.nccl_p2p += 1;
                } else if t.starts_with("SHM") {
                    out.nccl_shm += 1;
                }
            }
            const SET: &str = "NCCL_P2P_LEVEL set by environment to ";
            if let Some(i) = line.find(SET) {
                let v = line[i + SET.len()..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("");
                out.nccl_level = Some(v.trim_end_matches('.').to_string());
            }
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(first) = words.first() else {
            header.clear();
            continue;
        };
        let cols: Vec<u32> = words.iter().map_while(|w| gpu_index(w)).collect();
        // A header names two GPUs first; a row names one, then a cell.
        if cols.len() >= 2 {
            header = cols;
            continue;
        }
        let Some(row) = gpu_index(first) else {
            continue;
        };
        if header.is_empty() {
            continue;
        }
        for (col, cell) in header.iter().zip(words.iter().skip(1)) {
            if *col == row || *cell == "X" {
                continue;
            }
            if let Some(l) = PathLevel::parse(cell) {
                out.paths.push((row, *col, l));
            } else {
                match *cell {
                    "OK" => out.p2p_read.push((row, *col, true)),
                    "NS" | "CNS" | "GNS" | "TNS" | "NS*" | "U" => {
                        out.p2p_read.push((row, *col, false))
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TOPO_M: &str = "\
\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity
GPU0\t X \tPHB\tPXB\t0-31\t0
GPU1\tPHB\t X \tNV12\t0-31\t0
GPU2\tPXB\tNV12\t X \t0-31\t0

Legend:
  X    = Self
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
";

    const TOPO_P2P: &str = "\
 \tGPU0\tGPU1
 GPU0\tX\tNS
 GPU1\tNS\tX

Legend:
  OK = Status Ok
  NS = Not supported
";

    #[test]
    fn topo_m_gives_the_pci_paths_and_leaves_nvlink_out() {
        let p = parse(TOPO_M);
        assert_eq!(
            p.paths,
            [
                (0, 1, PathLevel::Phb),
                (0, 2, PathLevel::Pxb),
                (1, 0, PathLevel::Phb),
                (2, 0, PathLevel::Pxb)
            ]
        );
        assert!(p.p2p_read.is_empty());
    }

    #[test]
    fn topo_p2p_gives_the_drivers_answer() {
        let p = parse(TOPO_P2P);
        assert_eq!(p.p2p_read, [(0, 1, false), (1, 0, false)]);
        assert!(p.paths.is_empty());
    }

    #[test]
    fn nccl_lines_and_the_qemu_warning() {
        let t = "\
node1:123:456 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to PHB
node1:123:456 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct
node1:123:456 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via P2P/CUMEM/read
2026-12-01T10:00:00 qemu-system-x86_64: -device vfio-pci,host=0000:41:00.0: warning: vfio_container_dma_map(0x5581, 0x38000000000, 0x4000000000, 0x7f11) = -22 (Invalid argument)
0000:41:00.0: PCI peer-to-peer transactions on BARs are not supported.
";
        let p = parse(t);
        assert_eq!((p.nccl_p2p, p.nccl_shm), (1, 1));
        assert_eq!(p.nccl_level.as_deref(), Some("PHB"));
        assert!(p.qemu_bar_warning);
        assert!(parse("pci 0000:00:02.0: BAR 0: assigned").is_empty());
    }

    proptest! {
        #[test]
        fn any_text_parses_without_panic(t in "(GPU[0-9] |X |PHB |NS |OK |\n|\t| via P2P|NCCL INFO )*") {
            let p = parse(&t);
            prop_assert!(p.paths.iter().all(|(a, b, _)| a != b));
        }
    }
}

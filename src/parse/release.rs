//! Firmware release strings: which edk2 and SeaBIOS a version names, in
//! the forms `--firmware` takes and distributions' packages carry.

/// `ovmf:2022.11` -> rules; a Proxmox `4.2025.02-4` or Debian `2022.11-6`
/// package version carries the release too.
pub(crate) fn edk2_release(v: &str) -> Option<(u32, u32)> {
    // A date: Proxmox's older `3.20230228`, or a snapshot such as Debian
    // 10's `0~20181115.85588389-3` or Ubuntu 20.04's
    // `0~20191122.bd85bf54-2ubuntu3`, taken as that month's release.
    let upstream = v.rsplit_once('-').map_or(v, |(u, _)| u);
    if let Some(d) = upstream
        .split(['.', '~', '+'])
        .find(|p| p.len() == 8 && p.starts_with("20") && p.bytes().all(|b| b.is_ascii_digit()))
    {
        let month: u32 = d[4..6].parse().ok()?;
        return (1..=12)
            .contains(&month)
            .then_some((d[..4].parse().ok()?, month));
    }
    let v = v.split(['-', '+', '~']).next()?;
    let parts: Vec<&str> = v.split('.').collect();
    let (y, m) = match parts.as_slice() {
        [y, m] | [_, y, m] if y.len() == 4 => (*y, *m),
        [_, y, m, ..] if y.len() == 4 => (*y, *m),
        _ => return None,
    };
    Some((y.parse().ok()?, m.parse().ok()?))
}

/// SeaBIOS from 1.16.3 on places the window at the top.
pub(crate) fn seabios_top(v: &str) -> Option<bool> {
    let v = v.trim_start_matches("rel-").split(['-', '+', '~']).next()?;
    let n: Vec<u32> = v
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    Some(n >= vec![1, 16, 3])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_from_package_versions() {
        assert_eq!(edk2_release("2022.11"), Some((2022, 11)));
        assert_eq!(edk2_release("2022.11-6+deb12u2"), Some((2022, 11)));
        assert_eq!(edk2_release("4.2025.02-4~bpo12+1"), Some((2025, 2)));
        assert_eq!(edk2_release("3.20230228-4"), Some((2023, 2)));
        assert_eq!(
            edk2_release("0~20191122.bd85bf54-2ubuntu3.5"),
            Some((2019, 11))
        );
        assert_eq!(
            edk2_release("0~20181115.85588389-3+deb10u3"),
            Some((2018, 11))
        );
        assert_eq!(edk2_release("0~20191399.x-1"), None);
        assert_eq!(edk2_release("new"), None);
        assert_eq!(seabios_top("1.16.2"), Some(false));
        assert_eq!(seabios_top("1.16.3-2"), Some(true));
        assert_eq!(seabios_top("rel-1.17.0"), Some(true));
        assert_eq!(seabios_top("new"), None);
    }
}

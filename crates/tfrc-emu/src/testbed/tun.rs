//! The TUN device of a host: `/dev/net/tun` opened inside its namespace and attached to the
//! interface `tfrc0` with the `TUNSETIFF` ioctl.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt as _;

use super::netns::in_namespace;
use super::TUN_NAME;
use crate::error::{Error, IoContext, Result};

/// `struct ifreq` as TUNSETIFF reads it: the interface name and its flags.
#[repr(C)]
struct InterfaceRequest {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    padding: [u8; 22],
}

// The size of `struct ifreq`, which TUNSETIFF reads and writes whole.
const _: () = assert!(core::mem::size_of::<InterfaceRequest>() == 40);

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// Attaches the TUN device `tun` (an open `/dev/net/tun`) to the interface `request` names,
/// creating it with `request`'s flags.
#[allow(unsafe_code)]
fn set_tun_interface(tun: &File, request: &mut InterfaceRequest) -> std::io::Result<()> {
    // SAFETY: the descriptor is valid for the call (`tun` is borrowed), and TUNSETIFF reads and
    // writes one `struct ifreq`, which `InterfaceRequest` lays out (`#[repr(C)]`, 40 bytes)
    // and `request` borrows mutably for the call.
    let result = unsafe {
        libc::ioctl(
            tun.as_raw_fd(),
            TUNSETIFF as _,
            request as *mut InterfaceRequest,
        )
    };
    if result < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Creates the TUN device `tfrc0` inside `namespace` and returns it, open (non-blocking). The
/// device disappears when the file is closed.
pub(super) fn create_tun(namespace: &str) -> Result<File> {
    let handle = in_namespace(namespace, || -> std::io::Result<File> {
        // std opens with O_CLOEXEC.
        let tun = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/net/tun")?;
        let mut request = InterfaceRequest {
            name: [0; libc::IFNAMSIZ],
            flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
            padding: [0; 22],
        };
        request.name[..TUN_NAME.len()].copy_from_slice(TUN_NAME.as_bytes());
        set_tun_interface(&tun, &mut request)?;
        Ok(tun)
    })?;
    handle
        .join()
        .map_err(|_| Error::Failed(format!("the TUN thread of {namespace} panicked")))?
        .with_context(|| format!("cannot create the TUN device in {namespace}"))
}

//! Integer socket options that neither std nor socket2 wraps (`SO_RCVBUFFORCE`, the path-MTU
//! discovery modes).

use std::os::fd::RawFd;

/// `getsockopt(fd, level, name)` of an `int` option.
#[allow(unsafe_code)] // getsockopt: no safe wrapper for these options in std or socket2
pub fn get_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> std::io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut length = core::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `length` bytes (the size of `value`, a live `c_int`)
    // into `value` and the written length into `length`; a closed or wrong `fd` is an error
    // return, not undefined behaviour.
    let result = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut length,
        )
    };
    if result == 0 {
        Ok(value)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `setsockopt(fd, level, name, value)` of an `int` option.
#[allow(unsafe_code)] // setsockopt: no safe wrapper for these options in std or socket2
pub fn set_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: the option value points to `value`, a live `c_int` the kernel only reads, and the
    // length given is exactly its size.
    let result = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            core::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

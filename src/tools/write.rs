//! write_file: the whole content through the atomic write (`fs::atomic`), or appended to the
//! end of a file instead of replacing it.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;
use nix::unistd::{unlinkat, UnlinkatFlags};
use serde::Deserialize;

use crate::encoding;
use crate::error::ToolError;
use crate::fs::atomic::atomic_write;
use crate::fs::digest;
use crate::policy::confined::{self, Kind, Slot};
use crate::tools::{Ctx, Output};

#[derive(Deserialize)]
pub struct WriteFileArgs {
    path: String,
    content: String,
    #[serde(default)]
    append: bool,
    encoding: Option<String>,
    #[serde(rename = "expectedSha256")]
    expected_sha256: Option<String>,
}

pub fn write_file(ctx: &Ctx, args: WriteFileArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_write(&args.path)?;
    let bytes = match &args.encoding {
        None => Cow::Borrowed(args.content.as_bytes()),
        Some(label) => Cow::Owned(encoded(label, &args, &resolved.shown)?),
    };
    if let Some(expected) = &args.expected_sha256 {
        digest::check_file(&resolved, expected)?;
    }
    let slot =
        resolved.slot_making_parents().map_err(|e| ToolError::io("write", &resolved.shown, e))?;
    if args.append {
        // Written as it goes (`write_order::WriteTurn`): its turn holds until it is done.
        ctx.write_turn
            .keep_while(|| append(&slot, &bytes, &resolved.shown))
            .ok_or(ToolError::Cancelled)??;
        return Ok(Output::text(format!("Successfully appended to {}", resolved.shown.display())));
    }
    atomic_write(&slot, &bytes, |rename| ctx.write_turn.rename_last(rename))
        .map_err(|e| ToolError::io("write", &resolved.shown, e))?;
    Ok(Output::text(format!("Successfully wrote {}", resolved.shown.display())))
}

/// The content in the encoding `label` names, before anything is written. UTF-16 starts with
/// its BOM, unless appended.
fn encoded(label: &str, args: &WriteFileArgs, shown: &Path) -> Result<Vec<u8>, ToolError> {
    let Some((encoding, bom)) = encoding::for_label(label) else {
        return Err(ToolError::invalid_params(
            "encoding",
            format!(
                "{label:?} names no encoding replay writes; give a WHATWG label such as UTF-8, \
                 UTF-16LE, UTF-16BE, windows-1252, Shift_JIS, EUC-JP, GBK, gb18030, Big5 or \
                 EUC-KR"
            ),
        ));
    };
    encoding::encode_as(encoding, bom && !args.append, &args.content)
        .map_err(|what| ToolError::Unrepresentable { op: "write", path: shown.to_path_buf(), what })
}

/// Adds `bytes` to the end of the slot's file, creating it (mode 0666 less the umask) if it is
/// missing: one `O_APPEND` write through the slot's directory handle, then fsync. The file is
/// never rewritten, so appending to a big file costs the bytes appended.
///
/// Not atomic, unlike `atomic_write`: a reader may see part of the bytes while they are
/// written, and a crash can leave part of them appended. What was there before is never
/// touched. A failed write or fsync (a full disk) is undone: the file is cut back to its old
/// length, or a file this call created is removed, unless another process wrote to it
/// meanwhile, whose bytes are kept.
fn append(slot: &Slot, bytes: &[u8], shown: &Path) -> Result<(), ToolError> {
    let failed = |e| ToolError::io("append", shown, e);
    if let Some(stat) = slot.stat().map_err(failed)? {
        match stat.kind() {
            Kind::File => {}
            Kind::Dir => return Err(failed(io::Error::from(io::ErrorKind::IsADirectory))),
            // The policy resolved every link: one here was put there since.
            Kind::Symlink => return Err(failed(io::Error::from(Errno::ELOOP))),
            Kind::Other => return Err(ToolError::NotRegularFile { path: shown.to_path_buf() }),
        }
    }
    let dir = slot.dir.as_fd();
    let name = slot.name.as_os_str();
    // O_NONBLOCK: a FIFO swapped in since the stat must not hang the call.
    let flags = OFlag::O_WRONLY
        | OFlag::O_APPEND
        | OFlag::O_NOFOLLOW
        | OFlag::O_NONBLOCK
        | OFlag::O_CLOEXEC
        | OFlag::O_NOCTTY;
    let create = flags | OFlag::O_CREAT | OFlag::O_EXCL;
    let (fd, created) = match openat(dir, name, create, Mode::from_bits_truncate(0o666)) {
        Ok(fd) => (fd, true),
        Err(Errno::EEXIST) => {
            (openat(dir, name, flags, Mode::empty()).map_err(|e| failed(e.into()))?, false)
        }
        Err(e) => return Err(failed(e.into())),
    };
    let mut file = File::from(fd);
    let meta = file.metadata().map_err(failed)?;
    if !meta.is_file() {
        return Err(ToolError::NotRegularFile { path: shown.to_path_buf() });
    }
    if meta.nlink() > 1 {
        // Every other write replaces the directory entry, so a hard link to a file elsewhere is
        // never written through; appending in place would change that file too.
        return Err(ToolError::HardLinked { path: shown.to_path_buf(), links: meta.nlink() });
    }
    let old_len = meta.len();
    let mut written = 0;
    let result = (|| -> io::Result<()> {
        while written < bytes.len() {
            match file.write(&bytes[written..]) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        file.sync_data()
    })();
    if result.is_err() {
        // Undo only what is certainly ours alone: the file holds exactly the old bytes and ours.
        if file.metadata().is_ok_and(|m| m.len() == old_len + written as u64) {
            if created {
                remove_if_same(dir, name, &file);
            } else {
                let _ = file.set_len(old_len);
            }
        }
        return result.map_err(failed);
    }
    // Make the entry durable: a new one, or one a write_file just renamed into place, which
    // hands its turn on before its own directory fsync ends (`write_order::WriteTurn`).
    // (A bare `O_PATH` handle cannot be synced: best effort.)
    let _ = nix::unistd::fsync(dir);
    Ok(())
}

/// Removes `name` from `dir` if it is still the file `file` is open on.
fn remove_if_same(dir: BorrowedFd<'_>, name: &std::ffi::OsStr, file: &File) {
    use std::os::unix::fs::MetadataExt;
    let (Ok(ours), Ok(now)) = (file.metadata(), confined::stat_at(dir, name)) else { return };
    if ours.dev() == now.dev && ours.ino() == now.ino {
        let _ = unlinkat(dir, name, UnlinkatFlags::NoRemoveDir);
    }
}

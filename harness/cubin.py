"""What nvcc put inside a built extension (.so): the fatbin images in its .nv_fatbin section, and in their
cubins (ELF, embedded uncompressed by default) each kernel's launch bound. Plain ELF reading: no CUDA needed.

The .nv.info.<kernel> section of a cubin is a list of attribute records (u8 format, u8 attribute, then for
the "sized value" format a u16 size and that many bytes, else two bytes); EIATTR_MAX_THREADS holds the
(x, y, z) of __launch_bounds__. Anything unexpected leaves a kernel without a known bound."""
from __future__ import annotations

import struct
import subprocess
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50


def fatbins(so_path: str | Path) -> list[bytes]:
    """The fatbin images in an ELF shared object's .nv_fatbin section (one per translation unit with device
    code). Plain ELF reading: no CUDA needed."""
    data = Path(so_path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError(f"{so_path}: not a 64-bit ELF file")
    endian = "<" if data[5] == 1 else ">"
    shoff, = struct.unpack_from(endian + "Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from(endian + "HHH", data, 0x3A)

    def section(index):
        name, _type, _flags, _addr, offset, size = struct.unpack_from(endian + "IIQQQQ", data, shoff + index * shentsize)
        return name, offset, size

    _, str_off, _ = section(shstrndx)
    images = []
    for i in range(shnum):
        name_off, offset, size = section(i)
        name = data[str_off + name_off: data.index(b"\0", str_off + name_off)]
        if name != b".nv_fatbin":
            continue
        blob, pos = data[offset: offset + size], 0
        while pos + 16 <= len(blob):
            magic, _version, header_size, fat_size = struct.unpack_from(endian + "IHHQ", blob, pos)
            if magic != FATBIN_MAGIC:
                pos += 8  # images are 8-byte aligned; padding between them
                continue
            end = pos + header_size + fat_size
            images.append(bytes(blob[pos:end]))
            pos = (end + 7) // 8 * 8
    return images


EIATTR_MAX_THREADS = 0x05  # .nv.info.<kernel> attribute: the launch bound's (x, y, z)
EIFMT_SVAL = 0x04          # attribute records: u8 format, u8 attribute, then u16 size + data (SVAL) or 2 bytes


def _elf_sections(elf: bytes):
    """(name, data) of each section of a 64-bit little-endian ELF image."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def header(i):
        return struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)

    names_at = header(shstrndx)[4]
    for i in range(shnum):
        name_off, _type, _flags, _addr, offset, size = header(i)
        name = elf[names_at + name_off: elf.index(b"\0", names_at + name_off)]
        yield name.decode(errors="replace"), elf[offset: offset + size]


def nv_info_max_threads(blob: bytes) -> int | None:
    """Threads of the launch bound in one kernel's .nv.info section, if it has one."""
    pos = 0
    while pos + 4 <= len(blob):
        fmt, attribute = blob[pos], blob[pos + 1]
        size = struct.unpack_from("<H", blob, pos + 2)[0] if fmt == EIFMT_SVAL else 0
        if fmt == EIFMT_SVAL and attribute == EIATTR_MAX_THREADS and size == 12:
            x, y, z = struct.unpack_from("<III", blob, pos + 4)
            return x * y * z if 0 < x * y * z <= 1024 else None
        pos += 4 + size
    return None


def launch_bounds(so_path: str | Path) -> dict[str, int]:
    """kernel name -> launch-bound threads, from the uncompressed cubins of a .so's fatbins (nvcc embeds them
    so by default); kernels without __launch_bounds__ have none."""
    bounds = {}
    for image in fatbins(so_path):
        start = image.find(b"\x7fELF")
        while start >= 0:
            for name, data in _elf_sections(image[start:]):
                if name.startswith(".nv.info.") and (threads := nv_info_max_threads(data)):
                    bounds[name[len(".nv.info."):]] = threads
            start = image.find(b"\x7fELF", start + 4)
    return bounds


# Namespaces whose process-wide objects are the libraries' own (tag constants, their own caches), not a variant's.
LIBRARY_NAMESPACES = ("std::", "cuda::", "thrust::", "cub::", "at::", "c10::", "torch::", "pybind11::", "cute::",
                      "cutlass::", "__gnu_cxx::")


# How the demangler names an object that belongs to another (a static's guard, a class's vtable): such a symbol
# is judged by the object it names. Every build on the lent H100s (their own host compiler) holds 40 guards of
# libstdc++'s locale facets (first `guard variable for std::__cxx11::collate<char>::id`), none of them a variant's.
SPECIAL_NAME_PREFIXES = ("guard variable for ", "vtable for ", "construction vtable for ", "VTT for ",
                         "typeinfo for ", "typeinfo name for ", "TLS init function for ", "TLS wrapper function for ")


def named_object(demangled: str) -> str:
    """The object a demangled symbol stands for: `guard variable for ns::f()::x` -> `ns::f()::x`."""
    for prefix in SPECIAL_NAME_PREFIXES:
        if demangled.startswith(prefix):
            return demangled[len(prefix):]
    return demangled


def shared_statics(so_path: str | Path) -> list[str]:
    """The objects of a built extension that the dynamic loader makes one per process instead of one per
    extension: GNU unique symbols (`nm` type "u"), i.e. a function-local static of an inline or template function
    with external linkage, or a static data member of a class template. The profiling process and the GPU tests
    load several variants' extensions into one process, so a cache kept in such an object (say, "this kernel's
    shared-memory limit is raised") answers for another extension's kernel of the same name, whose launch is then
    refused. The variant's own objects only (LIBRARY_NAMESPACES left out), demangled, each once (a static and
    its guard variable are one object); needs binutils' nm."""
    listing = subprocess.run(["nm", "-DC", "--defined-only", str(so_path)], capture_output=True, text=True,
                             check=True).stdout
    names = set()
    for line in listing.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] == "u":
            name = named_object(parts[2])
            if not name.startswith(LIBRARY_NAMESPACES):
                names.add(name)
    return sorted(names)

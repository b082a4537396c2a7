"""Packs the built Python package (build/python/radstream: __init__.py and the compiled _core) into a wheel
beside it, so that `pip install build/python/radstream-*.whl` installs it into any virtual environment of the
same Python without a package registry. The wheel format: PEP 427 (a zip with NAME-VERSION.dist-info/
METADATA, WHEEL and RECORD, each file's sha256 in RECORD)."""
import base64
import hashlib
import pathlib
import sys
import sysconfig
import zipfile


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main(out_dir, version):
    out = pathlib.Path(out_dir)
    pkg = out / "radstream"
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tag = f"{py}-{py}-{plat}"
    info = f"radstream-{version}.dist-info"
    files = {f"radstream/{p.name}": p.read_bytes() for p in sorted(pkg.iterdir())
             if p.suffix in (".py", ".so")}
    files[f"{info}/METADATA"] = (f"Metadata-Version: 2.1\nName: radstream\nVersion: {version}\n"
                                 "Summary: Real-time radial MRI reconstruction (NUFFT, gridding, FBP, CG-SENSE, "
                                 "NLINV)\nRequires-Dist: numpy\n").encode()
    files[f"{info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: radstream make_wheel.py\nRoot-Is-Purelib: false\n"
                              f"Tag: {tag}\n").encode()
    record = "".join(f"{name},{digest(data)},{len(data)}\n" for name, data in files.items())
    record += f"{info}/RECORD,,\n"
    files[f"{info}/RECORD"] = record.encode()
    wheel = out / f"radstream-{version}-{tag}.whl"
    for old in out.glob("radstream-*.whl"):
        old.unlink()
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    print(f"radstream: wheel {wheel}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

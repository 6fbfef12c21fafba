"""scripts/ncu_hotspots.py: the instructions holding a kernel's stall samples, from ncu's SASS source page."""
import script_module

HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
          '"Instructions Executed","stall_barrier","stall_long_sb","stall_membar","stall_barrier (Not Issued)"')


def _script():
    return script_module.load("ncu_hotspots")


def _block(name, rows):
    out = [f'"Kernel Name","{name}",', HEADER]
    for i, (src, samples, executed, barrier, long_sb, membar) in enumerate(rows):
        out.append(f'"0x{16 * i:x}","{src}","{samples}","0","{executed}","{barrier}","{long_sb}","{membar}","0"')
    return out


def test_top_instructions_per_launch_with_their_reasons():
    gemm1 = [("LDC R1, c[0x0][0x28]", 2, 1344, 0, 0, 0), ("ERRBAR", 30, 896, 0, 0, 30),
             ("@!P0 BRA 0x10", 50, 1792, 0, 48, 0), ("FADD R1, R2, R3", 1, 896, 0, 1, 0)]
    gemm2 = [("LDC R1, c[0x0][0x28]", 5, 1536, 0, 0, 0), ("BAR.SYNC 0x0", 9, 1536, 9, 0, 0)]
    # the page repeats each launch's block; a second call of GEMM1 (same grid) is listed once, a GEMM1 launch on
    # another grid again
    other_grid = [("LDC R1, c[0x0][0x28]", 1, 640, 0, 0, 0)]
    lines = (_block("gemm1", gemm1) + _block("gemm1", gemm1) + _block("gemm2", gemm2) + _block("gemm1", gemm1)
             + _block("gemm1", other_grid))
    ncu = _script()
    text = ncu.render(ncu.read_blocks(lines), top=2)
    out = text.splitlines()
    assert [line.split()[1] for line in out if line.startswith("==")] == ["gemm1", "gemm2", "gemm1"]
    assert "83 samples" in out[1] and "1344 warps" in out[0]
    body = [line.split() for line in out[3:5]]
    assert [b[0] for b in body] == ["1", "2"]  # the two with the most samples, in listing order
    assert body[0][1] == "30" and "(membar" in out[3] and body[1][2] == "60.2%" and "long_sb 48" in out[4]
    assert "BAR.SYNC" in text and "(barrier 9)" in text


def test_not_a_source_page_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "details.csv"
    path.write_text('"ID","Kernel Name"\n"0","k"\n')
    assert _script().main(["ncu_hotspots.py", str(path)]) == 1
    assert "no \"Kernel Name\" block" in capsys.readouterr().err

"""Python variants without a GPU: the import check in a fresh interpreter (syntax, imports, forward's
signature), and telling a Triton compile error from the variant's own exceptions by where it was raised."""
import pytest

from harness import pyvariant

GOOD = "# summary: ok\n\ndef forward(hidden, w_down, w_up_k, w_up_v, kv_heads):\n    return hidden\n"


def write(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, fragment", [
    ("def forward(:\n", "import failed: SyntaxError"),
    ("import kvbench_nothing_here\n", "import failed: ModuleNotFoundError: No module named 'kvbench_nothing_here'"),
    ("raise RuntimeError('needs a GPU at import')\n", "import failed: RuntimeError: needs a GPU at import"),
    ("x = 1\n", "defines no forward(hidden, w_down, w_up_k, w_up_v, kv_heads)"),
    ("def forward(hidden, w_down, w_up):\n    pass\n", "forward must take (hidden, w_down, w_up_k, w_up_v, kv_heads)"),
])
def test_import_check_names_the_file_and_the_error(tmp_path, text, fragment):
    path = write(tmp_path, "bad", text)
    ok, message = pyvariant.import_check(path)
    assert not ok and message.startswith(f"{path}: ") and fragment in message, message


def test_a_good_file_passes_and_keyword_defaults_are_fine(tmp_path):
    assert pyvariant.import_check(write(tmp_path, "good", GOOD)) == (True, "")
    extra = GOOD.replace("kv_heads)", "kv_heads, *, tuned=True)")
    assert pyvariant.import_check(write(tmp_path, "extra", extra)) == (True, "")


def test_module_name_follows_the_file_contents(tmp_path):
    path = write(tmp_path, "v", GOOD)
    first = pyvariant.module_name(path)
    assert first.startswith("kvbench_py_v_") and first.isidentifier()
    path.write_text(GOOD + "\n# edited\n")
    assert pyvariant.module_name(path) != first


def _raise_from(filename: str):
    code = compile("def f():\n    raise RuntimeError('PassManager::run failed')\n", filename, "exec")
    namespace = {}
    exec(code, namespace)
    try:
        namespace["f"]()
    except RuntimeError as exc:
        return exc


def test_compile_errors_are_told_apart_by_where_they_were_raised():
    assert pyvariant.raised_in_triton_compiler(_raise_from("/x/site-packages/triton/compiler/compiler.py"))
    assert pyvariant.raised_in_triton_compiler(_raise_from("/x/site-packages/triton/backends/nvidia/compiler.py"))
    assert not pyvariant.raised_in_triton_compiler(_raise_from("/x/kernels/mine.py"))
    assert not pyvariant.raised_in_triton_compiler(_raise_from("/x/site-packages/triton/runtime/jit.py"))
    triton_error = type("CompilationError", (Exception,), {"__module__": "triton.compiler.errors"})
    assert pyvariant.raised_in_triton_compiler(triton_error("at 3:4: undefined name"))
    assert not pyvariant.raised_in_triton_compiler(ValueError("rank above 32"))

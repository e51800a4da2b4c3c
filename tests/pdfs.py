"""Small PDFs made in the test suite: one with a text layer, one without, one encrypted."""

from __future__ import annotations

import io


def _one_page(content: str) -> bytes:
    """A minimal one-page PDF around a content stream (Helvetica as /F1), written by hand."""
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(f"{i} 0 obj\n{body}\nendobj\n".encode("latin-1"))
    xref = out.tell()
    out.write(f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def _esc(t: str) -> str:
    return t.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def text_pdf(lines: list[str]) -> bytes:
    """A one-page PDF whose text layer holds `lines` (Helvetica), written by hand."""
    content = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join("(" + _esc(l) + ") '" for l in lines) + " ET"
    return _one_page(content)


def blank_pdf() -> bytes:
    from pypdf import PdfWriter

    w = PdfWriter()
    w.add_blank_page(612, 792)
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def encrypted_pdf() -> bytes:
    from pypdf import PdfReader, PdfWriter

    w = PdfWriter()
    w.append(PdfReader(io.BytesIO(text_pdf(["secret figures"]))))
    w.encrypt(user_password="hunter2", owner_password="owner")
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def placed_pdf(items: list[tuple[float, float, str]]) -> bytes:
    """A one-page PDF with each text at (x, y) in points (Helvetica 10): a table laid out as a
    filing prints it, with figures in columns."""
    content = " ".join(f"BT /F1 10 Tf 1 0 0 1 {x} {y} Tm ({_esc(t)}) Tj ET" for x, y, t in items)
    return _one_page(content)

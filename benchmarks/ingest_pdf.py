"""PDF ingest on real filings: seconds per 100 pages and chunk counts, before (pypdf text,
furniture dropped, tables flattened) and after (pdfplumber words, tables row by row).

    .venv/bin/python benchmarks/ingest_pdf.py [PDF ...]   # default: ../shared/data/10k-pdfs/*.pdf
"""

import sys
import time
from pathlib import Path

from pypdf import PdfReader

from kbake.config import IngestArgs
from kbake.ingest.chunker import chunk_text
from kbake.ingest.readers import drop_page_furniture, normalize_paragraphs, pdf_blocks
from kbake.models import load_tokenizer

paths = [Path(p) for p in sys.argv[1:]] or sorted((Path(__file__).resolve().parents[2] / "shared" / "data" / "10k-pdfs").glob("*.pdf"))
args = IngestArgs()
tok = load_tokenizer(args.tokenizer)
print("| filing | pages | before: s/100 pages | before: chunks | after: s/100 pages | after: chunks | table rows |")
print("|---|---|---|---|---|---|---|")
for path in paths:
    t0 = time.perf_counter()
    pages = [p.extract_text() or "" for p in PdfReader(str(path)).pages]
    before = normalize_paragraphs("\n\n".join(drop_page_furniture(pages)))
    t1 = time.perf_counter()
    after = normalize_paragraphs("\n\n".join(pdf_blocks(path, "")))
    t2 = time.perf_counter()
    n_before = len(chunk_text(before, tok, args.chunk_tokens, args.overlap_tokens))
    n_after = len(chunk_text(after, tok, args.chunk_tokens, args.overlap_tokens))
    rows = sum(" — " in para and ": " in para for para in after.split("\n\n"))
    n = len(pages)
    print(f"| {path.name} | {n} | {100 * (t1 - t0) / n:.1f} | {n_before} | {100 * (t2 - t1) / n:.1f} | {n_after} | {rows} |")

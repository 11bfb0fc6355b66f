use super::*;

#[test]
fn a_texts_numbers_hold_a_querys_digits_whenever_the_text_holds_the_query() {
    let texts = [
        "aten::linear, seq = 4711, op_id = 47110",
        "op_id = 04711, seq = 12345678901234567890123",
        "step 7",
        "step 70 of 100",
        "x4711y",
        "no numbers",
        "14711",
    ];
    let queries = [
        "op_id = 4711",
        "= 4711,",
        "4711",
        "711",
        "seq = 47",
        "0471",
        "71,",
        "step 7",
        "p 7 ",
        "1234567890123456789012",
        "00",
        "7 of 1",
        "11",
        "x47",
        "1y",
    ];
    let mut table = StringTable::new();
    let ids: Vec<StrId> = texts.iter().map(|t| table.intern(t)).collect();
    // (Texts whose template keeps digits of its own, "x4711y", are joined by a search
    // instead: the property is of the others.)
    for q in queries {
        let runs = DigitRun::all_in(q.as_bytes());
        for (&id, text) in ids.iter().zip(texts) {
            if table.template_has_digits(table.template_of(id)) {
                continue;
            }
            let can = runs.iter().all(|r| table.numbers_can_hold(id, r));
            if text.contains(q) {
                assert!(can, "{text:?} holds {q:?}, its numbers were said not to");
            }
        }
    }
    // Tested only where the query's text before the run stands in the template.
    for q in queries {
        let runs = DigitRun::all_in(q.as_bytes());
        for (&id, text) in ids.iter().zip(texts) {
            let t = table.template_of(id);
            if table.template_has_digits(t) {
                continue;
            }
            let can = runs
                .iter()
                .all(|r| table.numbers_can_hold_at(id, r, table.places_for(t, r)));
            if text.contains(q) {
                assert!(
                    can,
                    "{text:?} holds {q:?}, its numbers' places were said not to"
                );
            }
        }
    }
    let run = &DigitRun::all_in(b"op_id = 4711")[0];
    let t = table.template_of(ids[0]);
    assert_eq!(table.places_for(t, run), 0b10, "op_id is the second number");
    let seq = &DigitRun::all_in(b"seq = 47110")[0];
    assert!(!table.numbers_can_hold_at(ids[0], seq, table.places_for(t, seq)));
    // And it rules texts out: the point of it.
    let runs = DigitRun::all_in(b"op_id = 4711");
    assert!(runs.iter().all(|r| table.numbers_can_hold(ids[0], r)));
    assert!(!runs.iter().all(|r| table.numbers_can_hold(ids[2], r)));
    assert!(!runs.iter().all(|r| table.numbers_can_hold(ids[1], r)));
    let exact = DigitRun::all_in(b"= 4711,");
    assert!(exact.iter().all(|r| table.numbers_can_hold(ids[0], r)));
    assert!(!exact.iter().all(|r| table.numbers_can_hold(ids[6], r)));
}

#[test]
fn every_text_comes_back_exactly_and_once() {
    every_text_comes_back(false);
    every_text_comes_back(true);
}

fn every_text_comes_back(frozen: bool) {
    let texts = [
        "",
        "denoising_step_311",
        "denoising_step_0",
        "aten::linear, seq = 48299, op_id = 48299, sizes = [[1, 18900, 1536], [1536, 8960]], input_op_ids = [(48296, 0)]",
        "build 007 of 10",
        "x12345678901234567890123y",
        "ümlaut 3 ü",
        "#literal # and 5",
        "9",
    ];
    let mut table = StringTable::new();
    let ids: Vec<StrId> = texts.iter().map(|t| table.intern(t)).collect();
    if frozen {
        table.freeze();
    }
    for (t, &id) in texts.iter().zip(&ids) {
        assert_eq!(table.get(id), *t);
        assert_eq!(table.intern(t), id, "interned once");
        assert_eq!(table.find(t), Some(id));
    }
    assert_eq!(table.find("denoising_step_312"), None);
    assert_eq!(ids[0], 0, "the empty string is id 0");
}

#[test]
fn texts_equal_but_for_numbers_share_a_template() {
    let mut table = StringTable::new();
    let a = table.intern("denoising_step_3");
    let b = table.intern("denoising_step_1250");
    let c = table.intern("denoising_step_x");
    assert_eq!(table.template_of(a), table.template_of(b));
    assert_ne!(table.template_of(a), table.template_of(c));
    assert_eq!(
        table.template_text(table.template_of(a)),
        "denoising_step_#"
    );
    // A literal # is not a number.
    let d = table.intern("denoising_step_#");
    assert_ne!(table.template_of(a), table.template_of(d));
    assert!(table.template_contains(table.template_of(b), b"step_"));
    assert!(!table.template_contains(table.template_of(b), b"step_x"));
}

#[test]
fn absorbing_a_table_maps_its_ids_to_the_same_texts() {
    let mut chunk = StringTable::new();
    let texts = ["aten::mm, op_id = 5", "ffn", "aten::mm, op_id = 6", "ffn"];
    let local: Vec<StrId> = texts.iter().map(|t| chunk.intern(t)).collect();
    let mut global = StringTable::new();
    let before = global.intern("aten::mm, op_id = 6");
    let remap = global.absorb(&chunk);
    for (t, id) in texts.iter().zip(local) {
        assert_eq!(global.get(remap[id as usize]), *t);
    }
    assert_eq!(remap[local_id(&chunk, "aten::mm, op_id = 6")], before);
    assert_eq!(global.len(), 4, "'', two op texts, ffn");
}

/// Chunks absorbed one after another give every text the id that interning the texts in
/// their order would: ids do not depend on the order the index is walked in.
#[test]
fn absorbing_chunks_gives_the_ids_interning_in_order_gives() {
    let text = |k: u64| match k % 5 {
        0 => format!("aten::mm, op_id = {k}"),
        1 => format!("step_{}", k % 97),
        2 => "ffn".to_string(),
        3 => format!("x{k}y, seq = {}", k / 3),
        _ => format!("aten::add, sizes = [[{k}, 0{k}]]"),
    };
    let mut in_order = StringTable::new();
    let mut absorbed = StringTable::new();
    // A frozen table absorbs too (its index is built again).
    absorbed.freeze();
    for chunk_start in (0..60_000u64).step_by(7_000) {
        let mut chunk = StringTable::new();
        let texts: Vec<String> = (chunk_start..chunk_start + 7_000).map(text).collect();
        let local: Vec<StrId> = texts.iter().map(|t| chunk.intern(t)).collect();
        let remap = absorbed.absorb(&chunk);
        for (t, id) in texts.iter().zip(local) {
            assert_eq!(remap[id as usize], in_order.intern(t), "{t}");
        }
    }
    assert_eq!(absorbed.len(), in_order.len());
    for id in 0..absorbed.len() as StrId {
        assert_eq!(absorbed.get(id), in_order.get(id));
        assert_eq!(absorbed.find(&absorbed.get(id)), Some(id));
    }
}

fn local_id(table: &StringTable, text: &str) -> usize {
    table.find(text).unwrap() as usize
}

#[test]
fn distinct_op_texts_take_a_fraction_of_their_length() {
    let mut table = StringTable::new();
    let mut text_bytes = 0;
    for id in 0..100_000u64 {
        let t = format!(
            "aten::linear, seq = {id}, op_id = {id}, sizes = [[1, 18900, 1536], [4608, 1536], [4608]], input_op_ids = [({}, 0)]",
            id.saturating_sub(1)
        );
        text_bytes += t.len();
        table.intern(&t);
    }
    table.freeze();
    let seventh = "aten::linear, seq = 7, op_id = 7, sizes = [[1, 18900, 1536], [4608, 1536], [4608]], input_op_ids = [(6, 0)]";
    let found = table.find(seventh).expect("found without its index");
    assert_eq!(table.get(found), seventh);
    let per_text = table.heap_bytes() as f64 / 100_000.0;
    assert!(
        per_text < 40.0,
        "{per_text:.1} bytes per text of {} on average",
        text_bytes / 100_000
    );
}

#[test]
fn digits_inside_a_word_stay_in_its_template_and_numbers_are_masked() {
    let mut table = StringTable::new();
    let text = |table: &mut StringTable, s: &str| {
        let id = table.intern(s);
        table.template_text(table.template_of(id))
    };
    assert_eq!(text(&mut table, "ncclAllToAll4D"), "ncclAllToAll4D");
    assert_eq!(text(&mut table, "c10d::allreduce_"), "c10d::allreduce_");
    assert_eq!(text(&mut table, "denoising_step_12"), "denoising_step_#");
    assert_eq!(
        text(&mut table, "aten::linear, seq = 41, op_id = 7"),
        "aten::linear, seq = #, op_id = #"
    );
    assert_eq!(text(&mut table, "iter5"), "iter#");
    // Steps share a template; names with other inner digits do not.
    let (a, b) = (table.intern("step_1"), table.intern("step_2"));
    assert_eq!(table.template_of(a), table.template_of(b));
    let (c, d) = (table.intern("AllToAll4D"), table.intern("AllToAll2D"));
    assert_ne!(table.template_of(c), table.template_of(d));
    assert_eq!(table.get(c), "AllToAll4D");
}

#[test]
fn the_digit_mask_marks_exactly_the_ascii_digits_at_every_place_of_a_word() {
    for byte in 0..=255u8 {
        for place in 0..8 {
            // The byte among neighbours of every kind, so that no carry hides.
            for filler in [0u8, b'0' - 1, b'9' + 1, 0x7f, 0xff, b'5'] {
                let mut word = [filler; 8];
                word[place] = byte;
                let mask = digit_mask(u64::from_le_bytes(word));
                let marked = mask.to_le_bytes()[place] == 0x80;
                assert_eq!(marked, byte.is_ascii_digit(), "byte {byte:#x} at {place}");
            }
        }
    }
}

#[test]
fn texts_with_numbers_at_every_offset_of_a_word_come_back() {
    // Numbers and digits inside words starting at each of the eight offsets, across word
    // boundaries, at the text's end, long runs, and multi-byte letters.
    let mut table = StringTable::new();
    let mut texts = Vec::new();
    for pad in 0..17 {
        let p = "é,_ab".repeat(pad).chars().take(pad).collect::<String>();
        for tail in [
            "7",
            "x9y",
            " 0012",
            "12345678901234567890",
            "c10d 3",
            "ü4ü 8",
        ] {
            texts.push(format!("{p}{tail}"));
            texts.push(format!("{p}{tail}{p}"));
        }
    }
    let ids: Vec<StrId> = texts.iter().map(|t| table.intern(t)).collect();
    for (t, &id) in texts.iter().zip(&ids) {
        assert_eq!(table.get(id), t.as_str());
    }
    // A number one word in keeps a template shared with its neighbours'.
    let (a, b) = (table.intern("abcdefgh 1 x"), table.intern("abcdefgh 2 x"));
    assert_eq!(table.template_of(a), table.template_of(b));
}

/// The split as first written, a byte at a time: what [`split`] must give back exactly.
fn split_a_byte_at_a_time(text: &str) -> (Vec<u8>, Vec<u8>) {
    let (bytes, mut template, mut numbers) = (text.as_bytes(), Vec::new(), Vec::new());
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            template.push(bytes[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let run = &bytes[start..i];
        let letter = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_alphabetic);
        if start > 0 && letter(start - 1) && letter(i) {
            template.extend_from_slice(run);
        } else if run.len() <= 18 && (run.len() == 1 || run[0] != b'0') {
            template.push(NUMBER);
            let value = run.iter().fold(0u64, |v, d| v * 10 + (d - b'0') as u64);
            put_varint(&mut numbers, value << 1);
        } else {
            template.push(NUMBER);
            put_varint(&mut numbers, ((run.len() as u64) << 1) | 1);
            numbers.extend_from_slice(run);
        }
    }
    (template, numbers)
}

#[test]
fn the_split_reads_a_word_at_a_time_what_a_byte_at_a_time_reads() {
    // Runs of every length from 1 to 21 digits (the word's seven, eight, past 18), with
    // leading zeros, at every offset and at the end, beside letters, punctuation and
    // multi-byte letters; then random texts of those pieces.
    let pieces = [
        "a", "Z", " ", ",", "[", "_", "é", "ü", "0", "00", "7", "x", "(", "=", ":",
    ];
    let mut texts: Vec<String> = Vec::new();
    for digits in 1..=21 {
        let run: String = "9876543210".chars().cycle().take(digits).collect();
        for lead in ["", "0"] {
            for pad in 0..10 {
                for (before, after) in [("", ""), ("a", "b"), (" ", ","), ("x", ""), ("", "y")] {
                    let p = "ab, é".chars().cycle().take(pad).collect::<String>();
                    texts.push(format!("{p}{before}{lead}{run}{after}"));
                    texts.push(format!("{p}{before}{lead}{run}{after} seq = {run}, tail"));
                }
            }
        }
    }
    let mut rng = fastrand::Rng::with_seed(68);
    for _ in 0..20_000 {
        let n = rng.usize(0..40);
        texts.push((0..n).map(|_| pieces[rng.usize(0..pieces.len())]).collect());
    }
    let (mut template, mut numbers) = (Vec::new(), Vec::new());
    for text in &texts {
        split(text, &mut template, &mut numbers);
        let (t, n) = split_a_byte_at_a_time(text);
        assert_eq!((&template, &numbers), (&t, &n), "{text:?}");
    }
}

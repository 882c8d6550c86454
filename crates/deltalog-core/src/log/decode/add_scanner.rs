//! A fast scanner for the common shape of `add` and `remove` lines of a JSON commit (spec
//! "Add File and Remove File"), building the columns of
//! [`crate::actions::layout::file_action_schema`] directly.
//!
//! It knows exactly one shape: `{"add":{...}}` or `{"remove":{...}}` whose keys are fields of
//! the action (each at most once), with strings (standard JSON escapes, surrogate pairs),
//! integers, booleans, `null`, and string-to-string maps (`partitionValues`, `tags`) as
//! values. Anything else (an unknown key, a deletion vector, a float, a lone surrogate, a raw
//! control character, any other action) makes [`scan_file_actions`] answer `None`, and the
//! caller decodes the lines with the generic decoder instead: the output of both is the same
//! for every line the scanner accepts (a property test compares them).
//!
//! The scanner also finishes the adds as [`finish_adds`] does: it fills `numRecords` from
//! each `stats` string, reading it straight out of the JSON text of the common shape
//! (`"{\"numRecords\":5,...}"`), and keeps the strings as [`StatsText`] says: dropped
//! (skipped without being decoded), decoded, or as they are in the line (escapes not decoded).

use std::sync::Arc;

use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow_array::builder::{BooleanBuilder, Int64Builder, StringBuilder};
use arrow_array::{new_null_array, ArrayRef, MapArray, RecordBatch, StructArray};
use arrow_schema::{DataType, FieldRef, Fields};

#[cfg(doc)]
use crate::actions::layout::finish_adds;
use crate::actions::layout::{
    add, add_fields, file_action_schema, leading_count, num_records, remove_fields,
};
use crate::util::json_cursor::{decode_string_body, Cursor};

/// What becomes of the `stats` strings of the adds a scan reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum StatsText {
    /// Dropped (null), skipped without being decoded.
    #[default]
    Dropped,
    /// Decoded, as the generic decoder gives them.
    Decoded,
    /// Kept as the line holds them: the text between the quotes of the string token, escapes
    /// not decoded, for a filtered load to judge without decoding each string
    /// (`table_config::stats::parse_escaped_stats`) and to decode only the strings of the files
    /// it keeps. Every one kept was checked to be a string's text.
    Escaped,
}

impl StatsText {
    /// Decoded when `keep`, else dropped.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn kept(keep: bool) -> Self {
        match keep {
            true => StatsText::Decoded,
            false => StatsText::Dropped,
        }
    }
}

/// The `add`/`remove` lines (each a whole JSON line) as one batch of
/// [`file_action_schema`], its adds finished as [`finish_adds`] finishes them (`numRecords`
/// filled, the `stats` strings kept as `stats` says), or `None` when a line is not of the
/// shape this scanner knows.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn scan_file_actions(lines: &[&[u8]], stats: StatsText) -> Option<RecordBatch> {
    let mut adds = ActionColumns::new(add_fields(), lines.len());
    adds.stats = StatsColumns::of(&adds.fields, stats);
    let mut removes = ActionColumns::new(remove_fields(), lines.len());
    let mut scratch = String::new();
    for line in lines {
        let text = std::str::from_utf8(line).ok()?;
        let mut cursor = Cursor::new(text);
        cursor.expect(b'{')?;
        let name = cursor.string(&mut scratch)?;
        let (target, other) = match name {
            "add" => (&mut adds, &mut removes),
            "remove" => (&mut removes, &mut adds),
            _ => return None,
        };
        cursor.expect(b':')?;
        target.push_object(&mut cursor, &mut scratch)?;
        other.push_absent();
        cursor.expect(b'}')?;
        cursor.end()?;
    }
    let columns: Vec<ArrayRef> = vec![Arc::new(adds.finish()?), Arc::new(removes.finish()?)];
    RecordBatch::try_new(file_action_schema(), columns).ok()
}

/// The columns of one action struct being built, one accumulator per field.
struct ActionColumns {
    fields: Fields,
    columns: Vec<Column>,
    present: Vec<bool>,
    /// For adds: where `stats` and `numRecords` are, the second filled from the first.
    stats: Option<StatsColumns>,
}

/// The positions of an add's `stats` and `numRecords` fields, and what becomes of the `stats`
/// strings.
#[derive(Clone, Copy)]
struct StatsColumns {
    stats: usize,
    records: usize,
    text: StatsText,
}

impl StatsColumns {
    fn of(fields: &Fields, text: StatsText) -> Option<Self> {
        let position = |name: &str| fields.iter().position(|field| field.name() == name);
        Some(StatsColumns {
            stats: position(add::STATS)?,
            records: position(add::NUM_RECORDS)?,
            text,
        })
    }
}

impl ActionColumns {
    fn new(fields: Fields, capacity: usize) -> Self {
        let columns = fields
            .iter()
            .map(|field| Column::new(field.data_type(), capacity))
            .collect();
        ActionColumns {
            fields,
            columns,
            present: Vec::with_capacity(capacity),
            stats: None,
        }
    }

    /// Reads one action object and appends it as a row.
    fn push_object(&mut self, cursor: &mut Cursor<'_>, scratch: &mut String) -> Option<()> {
        cursor.expect(b'{')?;
        let mut seen: u64 = 0;
        if !cursor.next_is(b'}') {
            loop {
                let key = cursor.string(scratch)?;
                let index = self.fields.iter().position(|field| field.name() == key)?;
                let bit = 1u64 << index;
                if seen & bit != 0 {
                    return None;
                }
                seen |= bit;
                cursor.expect(b':')?;
                match self.stats {
                    Some(stats) if stats.stats == index => {
                        let records = 1u64 << stats.records;
                        if seen & records != 0 {
                            return None;
                        }
                        seen |= records;
                        self.push_stats(stats, cursor, scratch)?;
                    }
                    _ => self.columns[index].push_value(cursor, scratch)?,
                }
                if !cursor.next_is(b',') {
                    cursor.expect(b'}')?;
                    break;
                }
            }
        }
        for (index, column) in self.columns.iter_mut().enumerate() {
            if seen & (1u64 << index) == 0 {
                column.push_null();
            }
        }
        self.present.push(true);
        Some(())
    }

    /// Appends a row's `stats` value and the `numRecords` read from it (null without one).
    fn push_stats(
        &mut self,
        at: StatsColumns,
        cursor: &mut Cursor<'_>,
        scratch: &mut String,
    ) -> Option<()> {
        let (records, stats) = match (cursor.null(), at.text) {
            (true, _) => (None, None),
            (false, StatsText::Decoded) => {
                let stats = cursor.string(scratch)?;
                (num_records(stats), Some(stats))
            }
            (false, StatsText::Dropped) => (records_of_body(cursor.string_body()?, scratch)?, None),
            (false, StatsText::Escaped) => {
                let body = cursor.string_body()?;
                (records_of_body(body, scratch)?, Some(body))
            }
        };
        let Column::Integer(records_column) = &mut self.columns[at.records] else {
            return None;
        };
        records_column.append_option(records);
        let Column::Text(stats_column) = &mut self.columns[at.stats] else {
            return None;
        };
        stats_column.append_option(stats);
        Some(())
    }

    /// Appends a row where this action is absent (the line holds the other one).
    fn push_absent(&mut self) {
        for column in &mut self.columns {
            column.push_null();
        }
        self.present.push(false);
    }

    fn finish(self) -> Option<StructArray> {
        let rows = self.present.len();
        let columns = self
            .columns
            .into_iter()
            .zip(self.fields.iter())
            .map(|(column, field)| column.finish(field, rows))
            .collect::<Option<Vec<_>>>()?;
        let nulls = NullBuffer::from(self.present);
        StructArray::try_new(self.fields, columns, Some(nulls)).ok()
    }
}

/// `numRecords` of the statistics string whose token holds `body` between its quotes (spec
/// "Per-file Statistics"): read straight from the text when it opens with
/// `{\"numRecords\":<digits>` as Delta writers write it, else from the decoded string as
/// [`num_records`] reads it. `None` for a body that is not a string's text.
fn records_of_body(body: &str, scratch: &mut String) -> Option<Option<i64>> {
    const OPENING: &str = r#"{\"numRecords\":"#;
    if let Some(records) = body.strip_prefix(OPENING).and_then(leading_count) {
        return Some(Some(records));
    }
    decode_string_body(body, scratch)?;
    Some(num_records(scratch))
}

/// One field's values.
enum Column {
    Text(StringBuilder),
    Integer(Int64Builder),
    Flag(BooleanBuilder),
    Map(MapColumn),
    /// A field this scanner does not read (deletion vectors): always null here, and a line
    /// that sets it goes to the generic decoder.
    Unread,
}

impl Column {
    fn new(data_type: &DataType, capacity: usize) -> Self {
        match data_type {
            DataType::Utf8 => Column::Text(StringBuilder::with_capacity(capacity, capacity * 16)),
            DataType::Int64 => Column::Integer(Int64Builder::with_capacity(capacity)),
            DataType::Boolean => Column::Flag(BooleanBuilder::with_capacity(capacity)),
            DataType::Map(..) => Column::Map(MapColumn::new(capacity)),
            _ => Column::Unread,
        }
    }

    fn push_value(&mut self, cursor: &mut Cursor<'_>, scratch: &mut String) -> Option<()> {
        if cursor.null() {
            self.push_null();
            return Some(());
        }
        match self {
            Column::Text(builder) => builder.append_value(cursor.string(scratch)?),
            Column::Integer(builder) => builder.append_value(cursor.integer()?),
            Column::Flag(builder) => builder.append_value(cursor.boolean()?),
            Column::Map(map) => map.push_object(cursor, scratch)?,
            Column::Unread => return None,
        }
        Some(())
    }

    fn push_null(&mut self) {
        match self {
            Column::Text(builder) => builder.append_null(),
            Column::Integer(builder) => builder.append_null(),
            Column::Flag(builder) => builder.append_null(),
            Column::Map(map) => map.push_null(),
            Column::Unread => {}
        }
    }

    fn finish(self, field: &FieldRef, rows: usize) -> Option<ArrayRef> {
        Some(match self {
            Column::Text(mut builder) => Arc::new(builder.finish()),
            Column::Integer(mut builder) => Arc::new(builder.finish()),
            Column::Flag(mut builder) => Arc::new(builder.finish()),
            Column::Map(map) => Arc::new(map.finish(field.data_type())?),
            Column::Unread => new_null_array(field.data_type(), rows),
        })
    }
}

/// A `map<string, string>` column being built.
struct MapColumn {
    offsets: Vec<i32>,
    keys: StringBuilder,
    values: StringBuilder,
    valid: Vec<bool>,
}

impl MapColumn {
    fn new(capacity: usize) -> Self {
        let mut offsets = Vec::with_capacity(capacity + 1);
        offsets.push(0);
        MapColumn {
            offsets,
            // Most maps are empty (`tags`, and `partitionValues` of unpartitioned tables): the
            // builders start empty and grow with the entries, instead of the default capacity
            // that every finished column would keep (10 KiB per map column per commit).
            keys: StringBuilder::with_capacity(0, 0),
            values: StringBuilder::with_capacity(0, 0),
            valid: Vec::with_capacity(capacity),
        }
    }

    fn push_object(&mut self, cursor: &mut Cursor<'_>, scratch: &mut String) -> Option<()> {
        cursor.expect(b'{')?;
        let mut entries: i32 = 0;
        if !cursor.next_is(b'}') {
            loop {
                self.keys.append_value(cursor.string(scratch)?);
                cursor.expect(b':')?;
                if cursor.null() {
                    self.values.append_null();
                } else {
                    self.values.append_value(cursor.string(scratch)?);
                }
                entries += 1;
                if !cursor.next_is(b',') {
                    cursor.expect(b'}')?;
                    break;
                }
            }
        }
        let last = *self.offsets.last()?;
        self.offsets.push(last.checked_add(entries)?);
        self.valid.push(true);
        Some(())
    }

    fn push_null(&mut self) {
        let last = self.offsets.last().copied().unwrap_or_default();
        self.offsets.push(last);
        self.valid.push(false);
    }

    fn finish(mut self, data_type: &DataType) -> Option<MapArray> {
        let DataType::Map(entries_field, sorted) = data_type else {
            return None;
        };
        let DataType::Struct(entry_fields) = entries_field.data_type() else {
            return None;
        };
        let keys: ArrayRef = Arc::new(self.keys.finish());
        let values: ArrayRef = Arc::new(self.values.finish());
        let entries = StructArray::try_new(entry_fields.clone(), vec![keys, values], None).ok()?;
        let offsets = OffsetBuffer::new(self.offsets.into());
        let nulls = NullBuffer::from(self.valid);
        MapArray::try_new(
            entries_field.clone(),
            offsets,
            entries,
            Some(nulls),
            *sorted,
        )
        .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::layout::{finish_adds, struct_column};
    use crate::log::decode::commit::decode_file_lines;
    use crate::table_config::stats::decode_string_bodies;
    use arrow_array::{Array, StringArray};
    use proptest::prelude::*;

    /// The scanner's batch for `lines`, checked equal to the generic decoder's finished as
    /// [`finish_adds`] finishes it, column by column and child by child (also under absent
    /// actions), with the `stats` strings kept and without; kept escaped, they decode to the
    /// strings kept decoded.
    fn scan_matches_generic(lines: &[String]) -> Option<RecordBatch> {
        let bytes: Vec<&[u8]> = lines.iter().map(|line| line.as_bytes()).collect();
        let without_stats = scan_file_actions(&bytes, StatsText::Dropped);
        let escaped = scan_file_actions(&bytes, StatsText::Escaped);
        let scanned = scan_file_actions(&bytes, StatsText::Decoded)?;
        assert!(
            without_stats.is_some(),
            "scanned with the stats decoded only"
        );
        for (keep_stats, scanned) in [(true, &scanned), (false, &without_stats?)] {
            assert_matches_generic(&bytes, scanned, keep_stats);
        }
        assert_escaped_decode_to(&escaped.expect("scanned escaped"), &scanned);
        Some(scanned)
    }

    /// The adds of `escaped` (stats kept escaped) are those of `decoded` once their `stats`
    /// strings are decoded.
    fn assert_escaped_decode_to(escaped: &RecordBatch, decoded: &RecordBatch) {
        let adds = struct_column(escaped, "add", "t").unwrap();
        let (fields, mut columns, nulls) = adds.into_parts();
        let at = fields.iter().position(|f| f.name() == add::STATS).unwrap();
        let bodies = columns[at].as_any().downcast_ref::<StringArray>().unwrap();
        columns[at] = Arc::new(decode_string_bodies(bodies, None).unwrap());
        let adds = StructArray::try_new(fields, columns, nulls).unwrap();
        let expected = struct_column(decoded, "add", "t").unwrap();
        assert!(
            adds.to_data() == expected.to_data(),
            "{adds:?} != {expected:?}"
        );
    }

    fn assert_matches_generic(lines: &[&[u8]], scanned: &RecordBatch, keep_stats: bool) {
        let generic = decode_file_lines(lines, "test.json").unwrap();
        let adds = struct_column(&generic, "add", "t").unwrap();
        let adds = finish_adds(adds, None, keep_stats).unwrap();
        let generic = [adds, struct_column(&generic, "remove", "t").unwrap()];
        assert_eq!(scanned.num_columns(), generic.len());
        for (ours, theirs) in scanned.columns().iter().zip(&generic) {
            let ours = ours.as_any().downcast_ref::<StructArray>().unwrap();
            assert_eq!(ours.fields(), theirs.fields());
            assert_eq!(null_mask(ours), null_mask(theirs));
            for (index, field) in ours.fields().iter().enumerate() {
                let (a, b) = (ours.column(index), theirs.column(index));
                assert_eq!(null_mask(a), null_mask(b), "{}", field.name());
                assert!(
                    a.to_data() == b.to_data(),
                    "{}: {a:?} != {b:?}",
                    field.name()
                );
            }
            assert!(ours.to_data() == theirs.to_data());
        }
    }

    fn null_mask(array: &dyn Array) -> Vec<bool> {
        (0..array.len()).map(|row| array.is_null(row)).collect()
    }

    /// `text` as a JSON string literal, each character spelled as `style` picks: as itself
    /// where allowed, a short escape, or `\u` escapes (surrogate pairs beyond the BMP).
    fn encode(text: &str, style: &[u8]) -> String {
        let mut out = String::from("\"");
        for (index, c) in text.chars().enumerate() {
            let pick = style.get(index % style.len().max(1)).copied().unwrap_or(0) % 4;
            let short = match c {
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '/' if pick == 1 => Some("\\/"),
                '\n' => Some("\\n"),
                '\r' => Some("\\r"),
                '\t' => Some("\\t"),
                '\u{8}' => Some("\\b"),
                '\u{c}' => Some("\\f"),
                _ => None,
            };
            let must_escape = c < ' ' || c == '"' || c == '\\';
            match (pick, short) {
                (0 | 1, Some(short)) => out.push_str(short),
                (0 | 1, None) if !must_escape => out.push(c),
                _ => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        match pick {
                            3 => out.push_str(&format!("\\u{unit:04X}")),
                            _ => out.push_str(&format!("\\u{unit:04x}")),
                        }
                    }
                }
            }
        }
        out.push('"');
        out
    }

    fn awkward_text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9=/%._-]{0,12}",
            any::<String>(),
            "[\"\\\\/\\n\\t\\u{0}-\\u{1f}é€😀\u{20000}\u{10FFFF}\u{FFFF} ]{0,8}",
        ]
    }

    /// One field of an action: its key and its JSON value text.
    fn field(key: &'static str, value: BoxedStrategy<String>) -> BoxedStrategy<(String, String)> {
        value
            .prop_map(move |value| (key.to_string(), value))
            .boxed()
    }

    fn string_value() -> BoxedStrategy<String> {
        (awkward_text(), prop::collection::vec(any::<u8>(), 1..6))
            .prop_map(|(text, style)| encode(&text, &style))
            .boxed()
    }

    fn nullable(value: BoxedStrategy<String>) -> BoxedStrategy<String> {
        prop_oneof![4 => value, 1 => Just("null".to_string())].boxed()
    }

    fn integer_value() -> BoxedStrategy<String> {
        prop_oneof![any::<i64>(), 0..10_000i64]
            .prop_map(|n| n.to_string())
            .boxed()
    }

    fn map_value() -> BoxedStrategy<String> {
        let entry = (string_value(), nullable(string_value()));
        prop::collection::vec(entry, 0..4)
            .prop_map(|entries| {
                let body: Vec<String> = entries
                    .iter()
                    .map(|(key, value)| format!("{key}:{value}"))
                    .collect();
                format!("{{{}}}", body.join(","))
            })
            .boxed()
    }

    /// Statistics as writers put them: a JSON object encoded as a JSON string.
    fn stats_value() -> BoxedStrategy<String> {
        let stats = (any::<u32>(), awkward_text(), awkward_text(), any::<u64>());
        (stats, prop::collection::vec(any::<u8>(), 1..6))
            .prop_map(|((records, min, max, nulls), style)| {
                let object = serde_json::json!({"numRecords": records,
                    "minValues": {"s": min, "n": -3}, "maxValues": {"s": max, "n": 9},
                    "nullCount": {"s": nulls % 5, "n": 0}, "tightBounds": true});
                encode(&object.to_string(), &style)
            })
            .boxed()
    }

    fn boolean_value() -> BoxedStrategy<String> {
        any::<bool>().prop_map(|b| b.to_string()).boxed()
    }

    fn add_line() -> impl Strategy<Value = String> {
        let required = vec![
            field("path", string_value()),
            field("partitionValues", map_value()),
            field("size", integer_value()),
            field("modificationTime", integer_value()),
            field("dataChange", boolean_value()),
        ];
        let optional = vec![
            field("stats", nullable(stats_value())),
            field("tags", nullable(map_value())),
            field("baseRowId", nullable(integer_value())),
            field("defaultRowCommitVersion", nullable(integer_value())),
            field("clusteringProvider", nullable(string_value())),
            field("deletionVector", Just("null".to_string()).boxed()),
        ];
        action_line("add", required, optional)
    }

    fn remove_line() -> impl Strategy<Value = String> {
        let required = vec![field("path", string_value())];
        let optional = vec![
            field("deletionTimestamp", nullable(integer_value())),
            field("dataChange", boolean_value()),
            field("extendedFileMetadata", nullable(boolean_value())),
            field("partitionValues", nullable(map_value())),
            field("size", nullable(integer_value())),
            field("stats", nullable(stats_value())),
            field("tags", nullable(map_value())),
            field("baseRowId", nullable(integer_value())),
            field("defaultRowCommitVersion", nullable(integer_value())),
        ];
        action_line("remove", required, optional)
    }

    /// `{"<name>":{...}}` with the required fields, some optional ones, in any order, with
    /// or without spaces.
    fn action_line(
        name: &'static str,
        required: Vec<BoxedStrategy<(String, String)>>,
        optional: Vec<BoxedStrategy<(String, String)>>,
    ) -> impl Strategy<Value = String> {
        let optional: Vec<_> = optional
            .into_iter()
            .map(|field| prop::option::of(field).boxed())
            .collect();
        (required, optional, any::<bool>(), any::<u64>())
            .prop_flat_map(|(required, optional, spaced, _)| {
                let mut fields = required;
                fields.extend(optional.into_iter().flatten());
                (Just(fields).prop_shuffle(), Just(spaced))
            })
            .prop_map(move |(fields, spaced)| {
                let gap = if spaced { " " } else { "" };
                let body: Vec<String> = fields
                    .iter()
                    .map(|(key, value)| format!("\"{key}\"{gap}:{gap}{value}"))
                    .collect();
                format!(
                    "{{\"{name}\":{gap}{{{}}}{gap}}}",
                    body.join(&format!(",{gap}"))
                )
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn scanner_matches_the_generic_decoder(
            lines in prop::collection::vec(prop_oneof![3 => add_line(), 1 => remove_line()], 1..12)
        ) {
            let scanned = scan_matches_generic(&lines);
            prop_assert!(scanned.is_some(), "the common shape was not scanned: {lines:#?}");
        }
    }

    #[test]
    fn other_shapes_go_to_the_generic_decoder() {
        let lines = [
            r#"{"add":{"path":"a","size":1,"unknown":1}}"#,
            r#"{"add":{"path":"a","size":1.5}}"#,
            r#"{"add":{"path":"a","size":"1"}}"#,
            r#"{"add":{"path":"a","path":"b"}}"#,
            r#"{"add":{"path":"\ud800"}}"#,
            "{\"add\":{\"path\":\"a\u{1}b\"}}",
            r#"{"add":{"path":"a","deletionVector":{"storageType":"u"}}}"#,
            r#"{"add":{"path":"a","partitionValues":{"p":1}}}"#,
            r#"{"add":{"path":"a"},"remove":{"path":"b"}}"#,
            r#"{"cdc":{"path":"a"}}"#,
            r#"{"add":{"path":"a"}} x"#,
            r#"{"add":{"path":"a","size":01}}"#,
        ];
        for line in lines {
            assert!(
                scan_file_actions(&[line.as_bytes()], StatsText::Decoded).is_none(),
                "{line}"
            );
        }
    }

    #[test]
    fn records_come_from_every_stats_shape() {
        let stats = [
            r#""{\"numRecords\":5,\"minValues\":{\"a\":\"x\\\"y\"}}""#,
            r#""{\"numRecords\":7}""#,
            r#""{\"numRecords\":5.5,\"x\":1}""#,
            r#""{\"numRecords\":-3}""#,
            r#""{\"numRecords\": 4}""#,
            r#""{\"numRecords\":99999999999999999999}""#,
            r#""{\"numRecords\":}""#,
            r#""{\"a\":{\"numRecords\":1},\"numRecords\":2}""#,
            r#""{\u0022numRecords\u0022:6}""#,
            r#""not json""#,
            r#""""#,
            "null",
        ];
        let lines: Vec<String> = stats
            .iter()
            .map(|stats| format!(r#"{{"add":{{"path":"p","size":1,"stats":{stats}}}}}"#))
            .collect();
        let scanned = scan_matches_generic(&lines).unwrap();
        let adds = scanned
            .column(0)
            .as_any()
            .downcast_ref::<StructArray>()
            .unwrap();
        let records = adds.column_by_name(add::NUM_RECORDS).unwrap();
        let records = records
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .unwrap();
        assert_eq!(records.value(0), 5);
        assert_eq!(records.value(1), 7);
        assert_eq!(records.value(8), 6);
        assert!(records.is_null(11));
    }

    #[test]
    fn absent_fields_and_nulls_match_the_generic_decoder() {
        let lines = [
            r#"{"add":{"path":"a","partitionValues":{"p":null,"q":"x"},"size":1,"modificationTime":2,"dataChange":true,"stats":null,"deletionVector":null}}"#.to_string(),
            r#"{"remove":{"path":"a\/b","deletionTimestamp":3,"dataChange":false}}"#.to_string(),
            r#"{ "add" : { } }"#.to_string(),
            r#"{"remove":{"path":"\u00e9\ud83d\ude00\"","partitionValues":null}}"#.to_string(),
            r#"{"add":{"path":"\ud840\udc00","partitionValues":{"p":"\uD87E\uDC04"}}}"#.to_string(),
        ];
        assert!(scan_matches_generic(&lines).is_some());
    }
}

//! Time zones and the text grammar of dates and timestamps (spec "Partition Value
//! Serialization", "Per-file Statistics"; catalogue H-PV05).
//!
//! One grammar serves partition values, statistics, SQL literals and user-given times:
//!
//! * date: `[±]y-M-d`: a year of 1 to 6 digits (any number after an explicit sign), a month
//!   and a day of 1 or 2 digits;
//! * timestamp: `date[( |T)[H[H]:m[m][:s[s][.fraction]]][zone]]` with surrounding whitespace
//!   allowed; the fraction has 1 to 9 or more digits (beyond microseconds it is truncated);
//!   the zone, with or without a space before it, is anything [`SessionTimeZone::parse`] reads
//!   (`Z`, `UTC`, `+01:00`, `-0800`, `+5`, `GMT+8`, `America/Los_Angeles`, `PST`, ...).
//!
//! This is the union of what partition values (Spark's `Cast` of a string), SQL literals and
//! statistics were read with before they shared it. How a zone-less time is read (in a session
//! zone, in UTC, or as a wall-clock time) is the caller's choice, see [`parse_timestamp`] and
//! [`parse_timestamp_ntz`].

use std::fmt;
use std::str::FromStr;

use chrono::{
    DateTime, FixedOffset, MappedLocalTime, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone,
};
use chrono_tz::Tz;

use crate::error::{Error, Result};

/// Microseconds in a second.
pub(crate) const MICROS_PER_SECOND: i64 = 1_000_000;
/// Microseconds in a day.
pub(crate) const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;

/// The time zone in which zone-less `timestamp` partition values are read (catalogue H-PV05).
///
/// Delta on Spark writes a timestamp partition value as the wall-clock time of the writer's
/// session time zone, so reading it back needs that zone; the default is UTC. Parsed from
/// `UTC` (also `Z`, `GMT`, `UT`), a fixed offset (`+05:30`, `-08:00`, `+0530`, `+5`, `UTC+01:00`,
/// `GMT-8`), an IANA name (`America/Los_Angeles`) or one of Java's short ids (`PST`, `JST`, ...).
#[derive(Clone, PartialEq, Eq)]
pub struct SessionTimeZone {
    zone: Zone,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Zone {
    Fixed(FixedOffset),
    Named(Tz),
}

impl SessionTimeZone {
    /// UTC, the default session time zone.
    pub fn utc() -> Self {
        SessionTimeZone {
            zone: Zone::Fixed(utc_offset()),
        }
    }

    /// Parses a zone as described on [`SessionTimeZone`]. An unknown name is an
    /// [`Error::InvalidArgument`].
    pub fn parse(name: &str) -> Result<Self> {
        parse_zone(name.trim())
            .map(|zone| SessionTimeZone { zone })
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown session time zone `{name}`: expected UTC, an offset such as \
                     +05:30, or an IANA name such as America/Los_Angeles"
                ))
            })
    }

    /// Microseconds since the epoch of a wall-clock time in this zone, resolved as Java and
    /// Spark do: a time repeated by a backward shift takes the earlier offset (the earlier
    /// instant); a time skipped by a forward shift moves forward by the length of the gap.
    /// `None` only when the result leaves the `i64` range.
    pub fn local_to_utc_micros(&self, local: NaiveDateTime) -> Option<i64> {
        let offset_seconds = match self.zone {
            Zone::Fixed(offset) => offset.local_minus_utc(),
            Zone::Named(tz) => named_zone_offset(tz, local),
        };
        local
            .and_utc()
            .timestamp_micros()
            .checked_sub(i64::from(offset_seconds).checked_mul(1_000_000)?)
    }

    /// The wall-clock time in this zone of an instant (microseconds since the epoch); `None`
    /// outside chrono's range.
    pub fn utc_to_local(&self, micros: i64) -> Option<NaiveDateTime> {
        let instant = DateTime::from_timestamp_micros(micros)?;
        let offset_seconds = match self.zone {
            Zone::Fixed(offset) => offset.local_minus_utc(),
            Zone::Named(tz) => tz
                .offset_from_utc_datetime(&instant.naive_utc())
                .fix()
                .local_minus_utc(),
        };
        instant
            .naive_utc()
            .checked_add_signed(chrono::Duration::try_seconds(i64::from(offset_seconds))?)
    }
}

impl Default for SessionTimeZone {
    fn default() -> Self {
        SessionTimeZone::utc()
    }
}

impl FromStr for SessionTimeZone {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        SessionTimeZone::parse(name)
    }
}

impl fmt::Debug for SessionTimeZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionTimeZone({self})")
    }
}

impl fmt::Display for SessionTimeZone {
    /// `UTC`, an offset such as `+05:30`, or the IANA name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.zone {
            Zone::Fixed(offset) if offset.local_minus_utc() == 0 => f.write_str("UTC"),
            Zone::Fixed(offset) => write!(f, "{offset}"),
            Zone::Named(tz) => f.write_str(tz.name()),
        }
    }
}

/// Days since 1970-01-01 of a date `[±]y-M-d` (see the module docs); surrounding whitespace is
/// allowed, nothing else. `None` when the text is not a valid date.
pub(crate) fn parse_date(text: &str) -> Option<i32> {
    date_days(parse_naive_date(text.trim())?)
}

/// Days since 1970-01-01 of a serialised `date` partition value: a date, with any time part
/// after a space or `T` ignored (as Spark's cast of a string to a date does).
pub(crate) fn parse_date_prefix(text: &str) -> std::result::Result<i32, String> {
    let date_part = text.split([' ', 'T']).next().unwrap_or(text);
    let date = parse_naive_date(date_part).ok_or_else(|| "expected yyyy-MM-dd".to_string())?;
    date_days(date).ok_or_else(|| "out of range".to_string())
}

/// Microseconds since the epoch of the instant a timestamp text names (see the module docs):
/// a zone in the text wins; without one the wall-clock time is read in `default_zone`.
///
/// Partition values pass the session time zone, SQL literals and statistics pass UTC. The
/// error is a short reason (`expected yyyy-MM-dd HH:mm:ss[.SSSSSS][zone]`, `unknown time zone`,
/// `out of range`).
pub(crate) fn parse_timestamp(
    text: &str,
    default_zone: &SessionTimeZone,
) -> std::result::Result<i64, String> {
    let parsed = parse_timestamp_parts(text.trim())?;
    let zone = match parsed.zone {
        Some(zone) => SessionTimeZone { zone },
        None => default_zone.clone(),
    };
    zone.local_to_utc_micros(parsed.local)
        .ok_or_else(|| "out of range".to_string())
}

/// Microseconds since 1970-01-01 00:00:00 of the wall-clock time a timestamp text names; a
/// zone in the text is checked and ignored (how `timestamp_ntz` partition values are read).
pub(crate) fn parse_timestamp_ntz(text: &str) -> std::result::Result<i64, String> {
    Ok(parse_timestamp_parts(text.trim())?
        .local
        .and_utc()
        .timestamp_micros())
}

/// Milliseconds since the epoch of a user-given time, as `DeltaTable.snapshot(timestamp=...)`
/// takes it: an ISO-8601 date or timestamp (`2024-05-01`, `2024-05-01T12:30:00Z`,
/// `2024-05-01 12:30:00.5+02:00`, also a zone name) in the grammar of the module docs. Without a
/// zone the time is UTC; a date alone is its midnight in UTC. Sub-millisecond parts are dropped,
/// rounding towards the past.
///
/// Differences with Python's `datetime.fromisoformat`: the hour-only form (`T12`), the basic
/// forms without separators (`20240501`) and week dates are not accepted; a space may stand
/// for `T`, zone names and one-digit offsets are. Text outside the grammar is an
/// [`Error::InvalidArgument`].
pub fn parse_user_timestamp_ms(text: &str) -> Result<i64> {
    parse_timestamp(text, &SessionTimeZone::utc())
        .map(|micros| micros.div_euclid(1_000))
        .map_err(|reason| {
            Error::InvalidArgument(format!("'{text}' is not an ISO-8601 timestamp: {reason}"))
        })
}

/// `yyyy-MM-dd` of a day count since 1970-01-01 (a sign and more digits beyond year 9999);
/// `None` outside chrono's range.
pub(crate) fn format_date(days: i32) -> Option<String> {
    let date = epoch_date().checked_add_signed(chrono::Duration::try_days(i64::from(days))?)?;
    Some(date.format("%Y-%m-%d").to_string())
}

/// `yyyy-MM-dd HH:mm:ss` of microseconds since the epoch read as a wall-clock time, with the
/// fraction of a second when there is one, trailing zeros dropped (`.25`), as Spark casts a
/// timestamp to text: the form of the spec's "Partition Value Serialization" for
/// `timestamp_ntz` and of SQL literals. `None` outside chrono's range.
pub(crate) fn format_timestamp(micros: i64) -> Option<String> {
    let time = DateTime::from_timestamp_micros(micros)?;
    let text = time.naive_utc().format("%Y-%m-%d %H:%M:%S%.6f").to_string();
    Some(text.trim_end_matches('0').trim_end_matches('.').to_string())
}

/// `yyyy-MM-ddTHH:mm:ss.ffffffZ` of microseconds since the epoch: the ISO-8601 UTC form the
/// spec's "Partition Value Serialization" allows for `timestamp`, which Delta on Spark writes
/// (its `utcTimestampPartitionValues`, on by default) and which needs no time zone to read.
/// `None` outside chrono's range.
pub(crate) fn format_timestamp_utc(micros: i64) -> Option<String> {
    let time = DateTime::from_timestamp_micros(micros)?;
    Some(
        time.naive_utc()
            .format("%Y-%m-%dT%H:%M:%S%.6fZ")
            .to_string(),
    )
}

/// `yyyy-MM-ddTHH:mm:ss.SSS` of microseconds since the epoch, truncated (towards the past) to
/// milliseconds, followed by `Z` when `utc` (a `timestamp`) and by nothing otherwise (a
/// `timestamp_ntz`): how statistics record timestamps (spec "Per-file Statistics"). `None`
/// outside chrono's range.
pub(crate) fn format_timestamp_millis(micros: i64, utc: bool) -> Option<String> {
    let millis = micros.div_euclid(1_000);
    let time = DateTime::from_timestamp_millis(millis)?;
    let text = time.naive_utc().format("%Y-%m-%dT%H:%M:%S%.3f").to_string();
    Some(if utc { text + "Z" } else { text })
}

/// A date `[±]y-M-d`: 1 to 6 year digits unsigned, any number after a sign.
fn parse_naive_date(text: &str) -> Option<NaiveDate> {
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let signed = unsigned.len() < text.len();
    let mut parts = unsigned.splitn(3, '-');
    let year = parts.next()?;
    let month = parts.next()?;
    let day = parts.next()?;
    let number = |s: &str, max_len: usize| -> Option<u32> {
        (!s.is_empty() && s.len() <= max_len && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let year = i32::try_from(number(year, if signed { 10 } else { 6 })?).ok()?;
    let year = if negative { -year } else { year };
    NaiveDate::from_ymd_opt(year, number(month, 2)?, number(day, 2)?)
}

/// Days since 1970-01-01 of `date`.
fn date_days(date: NaiveDate) -> Option<i32> {
    i32::try_from(date.signed_duration_since(epoch_date()).num_days()).ok()
}

fn epoch_date() -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default()
}

/// A timestamp's wall-clock time and the zone written after it, if any.
struct ParsedTimestamp {
    local: NaiveDateTime,
    zone: Option<Zone>,
}

/// The wall-clock time and zone of a timestamp text (already trimmed).
fn parse_timestamp_parts(text: &str) -> std::result::Result<ParsedTimestamp, String> {
    let expected = || "expected yyyy-MM-dd HH:mm:ss[.SSSSSS][zone]".to_string();
    let date_end = text.find([' ', 'T']).unwrap_or(text.len());
    let date = parse_naive_date(&text[..date_end]).ok_or_else(expected)?;
    let rest = text.get(date_end + 1..).unwrap_or("");
    if rest.trim().is_empty() {
        return Ok(ParsedTimestamp {
            local: date.and_time(NaiveTime::MIN),
            zone: None,
        });
    }
    let (time, zone_text) = parse_time(rest).ok_or_else(expected)?;
    let zone_text = zone_text.trim();
    let zone = if zone_text.is_empty() {
        None
    } else {
        Some(parse_zone(zone_text).ok_or_else(|| format!("unknown time zone `{zone_text}`"))?)
    };
    Ok(ParsedTimestamp {
        local: date.and_time(time),
        zone,
    })
}

/// Parses `H[H]:m[m][:s[s][.fraction]]` (a fraction of at least one digit, truncated to
/// microseconds) and returns the time and the text after it.
fn parse_time(text: &str) -> Option<(NaiveTime, &str)> {
    let (hour, rest) = take_digits(text, 1, 2)?;
    let rest = rest.strip_prefix(':')?;
    let (minute, mut rest) = take_digits(rest, 1, 2)?;
    let mut second = 0;
    let mut micros = 0;
    if let Some(after_colon) = rest.strip_prefix(':') {
        let (s, after_seconds) = take_digits(after_colon, 1, 2)?;
        second = s;
        rest = after_seconds;
        if let Some(after_dot) = rest.strip_prefix('.') {
            let digits = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return None;
            }
            let fraction = &after_dot[..digits];
            let micro_digits = &fraction[..digits.min(6)];
            let value: u32 = micro_digits.parse().ok()?;
            micros = value * 10u32.pow(u32::try_from(6 - micro_digits.len()).ok()?);
            rest = &after_dot[digits..];
        }
    }
    let time = NaiveTime::from_hms_micro_opt(hour, minute, second, micros)?;
    Some((time, rest))
}

/// Leading ASCII digits (between `min` and `max` of them) as a number, and the rest.
fn take_digits(text: &str, min: usize, max: usize) -> Option<(u32, &str)> {
    let count = text.bytes().take_while(u8::is_ascii_digit).count();
    if count < min || count > max {
        return None;
    }
    Some((text[..count].parse().ok()?, &text[count..]))
}

fn parse_zone(name: &str) -> Option<Zone> {
    if matches!(name, "Z" | "UTC" | "GMT" | "UT" | "z" | "utc" | "gmt") {
        return Some(Zone::Fixed(utc_offset()));
    }
    if name.starts_with(['+', '-']) {
        return parse_offset(name).map(Zone::Fixed);
    }
    for prefix in ["UTC", "GMT", "UT"] {
        if let Some(offset) = name.strip_prefix(prefix) {
            if offset.starts_with(['+', '-']) {
                return parse_offset(offset).map(Zone::Fixed);
            }
        }
    }
    if let Some(alias) = java_short_id(name) {
        return parse_zone(alias);
    }
    if let Ok(tz) = name.parse::<Tz>() {
        return Some(Zone::Named(tz));
    }
    chrono_tz::TZ_VARIANTS
        .iter()
        .find(|tz| tz.name().eq_ignore_ascii_case(name))
        .map(|tz| Zone::Named(*tz))
}

/// Parses `±H`, `±HH`, `±HH:MM`, `±HHMM`, `±HH:MM:SS` (at most 18 hours, as in Java).
fn parse_offset(text: &str) -> Option<FixedOffset> {
    let sign = match text.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let body = &text[1..];
    let (hours, minutes, seconds) = if let Some((h, rest)) = body.split_once(':') {
        let (m, s) = rest.split_once(':').unwrap_or((rest, "0"));
        (h, m, s)
    } else if body.len() == 4 {
        (body.get(..2)?, body.get(2..)?, "0")
    } else {
        (body, "0", "0")
    };
    let field = |s: &str, max: i32| -> Option<i32> {
        let valid = !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
        valid
            .then(|| s.parse().ok())
            .flatten()
            .filter(|v| *v <= max)
    };
    let total = field(hours, 18)? * 3600 + field(minutes, 59)? * 60 + field(seconds, 59)?;
    if total > 18 * 3600 {
        return None;
    }
    FixedOffset::east_opt(sign * total)
}

fn utc_offset() -> FixedOffset {
    Offset::fix(&chrono::Utc)
}

/// The offset (seconds east of UTC) that applies to a wall-clock time in `tz`, resolved as
/// described on [`SessionTimeZone::local_to_utc_micros`].
fn named_zone_offset(tz: Tz, local: NaiveDateTime) -> i32 {
    match tz.offset_from_local_datetime(&local) {
        MappedLocalTime::Single(offset) | MappedLocalTime::Ambiguous(offset, _) => {
            offset.fix().local_minus_utc()
        }
        MappedLocalTime::None => {
            // In a gap the offsets before and after the transition are found by probing the
            // instants on either side; the time is read with the offset before the gap, which
            // moves it forward by the gap's length.
            let first = tz.offset_from_utc_datetime(&local).fix().local_minus_utc();
            let probe = local - chrono::Duration::seconds(i64::from(first));
            let second = tz.offset_from_utc_datetime(&probe).fix().local_minus_utc();
            first.min(second)
        }
    }
}

/// Java's `ZoneId.SHORT_IDS`, which Spark accepts as session time zones.
fn java_short_id(name: &str) -> Option<&'static str> {
    Some(match name {
        "ACT" => "Australia/Darwin",
        "AET" => "Australia/Sydney",
        "AGT" => "America/Argentina/Buenos_Aires",
        "ART" => "Africa/Cairo",
        "AST" => "America/Anchorage",
        "BET" => "America/Sao_Paulo",
        "BST" => "Asia/Dhaka",
        "CAT" => "Africa/Harare",
        "CNT" => "America/St_Johns",
        "CST" => "America/Chicago",
        "CTT" => "Asia/Shanghai",
        "EAT" => "Africa/Addis_Ababa",
        "ECT" => "Europe/Paris",
        "IET" => "America/Indiana/Indianapolis",
        "IST" => "Asia/Kolkata",
        "JST" => "Asia/Tokyo",
        "MIT" => "Pacific/Apia",
        "NET" => "Asia/Yerevan",
        "NST" => "Pacific/Auckland",
        "PLT" => "Asia/Karachi",
        "PNT" => "America/Phoenix",
        "PRT" => "America/Puerto_Rico",
        "PST" => "America/Los_Angeles",
        "SST" => "Pacific/Guadalcanal",
        "VST" => "Asia/Ho_Chi_Minh",
        "EST" => "-05:00",
        "MST" => "-07:00",
        "HST" => "-10:00",
        _ => return None,
    })
}

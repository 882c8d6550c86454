//! Decimal text: exact parsing at a column's scale, literal parsing at the text's own scale,
//! and the plain text of an unscaled value.

/// The largest precision of a Delta `decimal` (spec "Primitive Types").
pub(crate) const MAX_DECIMAL_PRECISION: u8 = 38;

/// Parses decimal text (`-12.50`, `1E+3`, `.5`, surrounding whitespace not allowed) into the
/// unscaled value at `scale`, exactly: extra fractional digits must be zeros and the value
/// must fit `precision` digits. The error is a short reason.
pub(crate) fn parse_decimal(
    text: &str,
    precision: u8,
    scale: i8,
) -> std::result::Result<i128, String> {
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => {
            let exponent: i32 = unsigned[at + 1..]
                .parse()
                .map_err(|_| "bad exponent".to_string())?;
            (&unsigned[..at], exponent)
        }
        None => (unsigned, 0),
    };
    let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits_ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (integer.is_empty() && fraction.is_empty()) || !digits_ok(integer) || !digits_ok(fraction) {
        return Err("not a decimal number".to_string());
    }
    // value = digits * 10^(exponent - fraction_len); the unscaled value is value * 10^scale.
    let fraction_len = i64::try_from(fraction.len()).map_err(|_| "too many digits".to_string())?;
    let shift = i64::from(exponent) - fraction_len + i64::from(scale);
    let too_big = || format!("does not fit decimal({precision},{scale})");
    let digits = integer.as_bytes().iter().chain(fraction.as_bytes());
    let total = integer.len() + fraction.len();
    let dropped = usize::try_from(shift.min(0).unsigned_abs()).unwrap_or(usize::MAX);
    let kept = total.saturating_sub(dropped);
    let mut unscaled: i128 = 0;
    for (i, digit) in digits.enumerate() {
        let digit = i128::from(digit - b'0');
        if i >= kept {
            if digit != 0 {
                return Err(format!(
                    "has more fractional digits than the scale {scale} allows"
                ));
            }
            continue;
        }
        unscaled = unscaled
            .checked_mul(10)
            .and_then(|u| u.checked_add(digit))
            .ok_or_else(too_big)?;
    }
    if shift > 0 {
        let factor = u32::try_from(shift)
            .ok()
            .and_then(|shift| 10i128.checked_pow(shift))
            .ok_or_else(too_big)?;
        unscaled = unscaled.checked_mul(factor).ok_or_else(too_big)?;
    }
    let limit = 10i128.pow(u32::from(precision.min(MAX_DECIMAL_PRECISION)));
    if unscaled >= limit {
        return Err(too_big());
    }
    Ok(if negative { -unscaled } else { unscaled })
}

/// Parses a SQL decimal literal (`12.50`, `-0.5`, `.5`, `7.`; no exponent) at the scale its
/// fractional digits give: `(unscaled, scale)`, or `None` when it has more than 38 significant
/// digits or fractional digits, or is not such a number.
pub(crate) fn parse_decimal_literal(text: &str) -> Option<(i128, u8)> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let scale = u8::try_from(fraction.len()).ok()?;
    let digits = format!("{whole}{fraction}");
    let significant = digits.trim_start_matches(['-', '0']).len();
    if significant > usize::from(MAX_DECIMAL_PRECISION) || scale > MAX_DECIMAL_PRECISION {
        return None;
    }
    let value = digits.parse::<i128>().ok()?;
    Some((value, scale))
}

/// The plain text of `value × 10^-scale` with exactly `scale` fractional digits (`-1.50`,
/// `0.05`, `7`): how partition values, statistics and SQL literals write decimals.
pub(crate) fn format_decimal(value: i128, scale: u8) -> String {
    let digits = value.unsigned_abs().to_string();
    let sign = if value < 0 { "-" } else { "" };
    let scale = usize::from(scale);
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let split = padded.len() - scale;
    let (whole, fraction) = padded.split_at(split);
    format!("{sign}{whole}.{fraction}")
}

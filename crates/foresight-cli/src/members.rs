//! The `members` lines of `foresight sim`'s report: each member disk's busy share of the run and
//! its drive cache hit share, in member order.
//!
//! An array's totals hide a member every stream waits on while the others idle, so every member
//! is shown: the busy shares on one line, the hit shares on the next. A narrow array's list fits
//! its line and is printed as it is. A wide one's would not (256 members made one line of about
//! 1,900 characters, when both lists shared it), so such a list gets a line naming it and lines of
//! figures under it: a run of at least [`RUN_MIN`] members in a row with the same figure is written once with its count
//! (`255 x 1%`), and the list is wrapped at [`WIDTH_CHARS`], each line starting with the index of
//! the first member it shows, so a member can be found without counting.

/// The widest line the members block prints, in characters.
pub const WIDTH_CHARS: usize = 100;

/// The fewest members in a row with one figure that are written as one `COUNT x FIGURE` item; two
/// are as short written out.
pub const RUN_MIN: usize = 3;

/// The label before the figures on every line of the block, and the indent under it.
const LABEL: &str = "  members      ";

/// The report's members lines for per-member busy shares `busy_frac` and drive cache hit shares
/// `hit_frac` (fractions, member 0 first).
pub fn member_lines(busy_frac: &[f64], hit_frac: &[f64]) -> Vec<String> {
    let indent = " ".repeat(LABEL.len());
    let mut lines = Vec::new();
    list_lines(LABEL, "busy", "of the run", busy_frac, &mut lines);
    list_lines(
        &indent,
        "drive cache hits",
        "of their requests",
        hit_frac,
        &mut lines,
    );
    lines
}

/// Appends one list's lines to `lines`: `NAME FIGURES SUFFIX` after `prefix` when it fits in
/// [`WIDTH_CHARS`], else a `NAME SUFFIX, by member:` line and the grouped figures wrapped under it.
fn list_lines(prefix: &str, name: &str, suffix: &str, fracs: &[f64], lines: &mut Vec<String>) {
    let figures: Vec<String> = fracs.iter().map(|&f| percent(f)).collect();
    let one = format!("{prefix}{name} {} {suffix}", figures.join(" "));
    if one.len() <= WIDTH_CHARS {
        lines.push(one);
        return;
    }
    lines.push(format!("{prefix}{name} {suffix}, by member:"));
    let indent = " ".repeat(LABEL.len());
    wrap(&grouped(&figures), figures.len(), &indent, lines);
}

fn percent(frac: f64) -> String {
    format!("{:.0}%", 100.0 * frac)
}

/// The figures as items with the number of members each covers: a run of at least [`RUN_MIN`]
/// equal figures is one item.
fn grouped(figures: &[String]) -> Vec<(String, usize)> {
    let mut items = Vec::new();
    let mut i = 0;
    while i < figures.len() {
        let run = figures[i..]
            .iter()
            .take_while(|f| **f == figures[i])
            .count();
        if run >= RUN_MIN {
            items.push((format!("{run} x {}", figures[i]), run));
        } else {
            items.extend(figures[i..i + run].iter().map(|f| (f.clone(), 1)));
        }
        i += run;
    }
    items
}

/// Appends `items` to `lines`, as many to a line as fit in [`WIDTH_CHARS`] (at least one), each
/// line opening with the index of its first member, right-aligned to the widest index of
/// `members`, and items separated by commas so a run's count cannot be read as a figure.
fn wrap(items: &[(String, usize)], members: usize, indent: &str, lines: &mut Vec<String>) {
    let index_chars = members.saturating_sub(1).to_string().len();
    let mut first = 0;
    let mut line = String::new();
    for (text, count) in items {
        if line.is_empty() {
            line = format!("{indent}  {first:>index_chars$}: {text}");
        } else if line.len() + 2 + text.len() <= WIDTH_CHARS {
            line.push_str(", ");
            line.push_str(text);
        } else {
            lines.push(std::mem::take(&mut line));
            line = format!("{indent}  {first:>index_chars$}: {text}");
        }
        first += count;
    }
    if !line.is_empty() {
        lines.push(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrow_array_keeps_a_line_per_list() {
        assert_eq!(
            member_lines(&[0.3, 0.29, 0.29], &[0.79, 0.68, 0.61]),
            vec![
                "  members      busy 30% 29% 29% of the run".to_string(),
                "               drive cache hits 79% 68% 61% of their requests".to_string(),
            ]
        );
    }

    #[test]
    fn a_wide_array_groups_runs_and_wraps_naming_each_line_s_first_member() {
        let mut busy = vec![0.0];
        busy.extend([0.01; 255]);
        let hits: Vec<f64> = (0..256).map(|i| f64::from(i % 7) / 10.0).collect();
        let lines = member_lines(&busy, &hits);
        for l in &lines {
            assert!(l.len() <= WIDTH_CHARS, "{l}");
        }
        assert_eq!(lines[0], "  members      busy of the run, by member:");
        assert_eq!(lines[1], "                   0: 0%, 255 x 1%");
        assert_eq!(
            lines[2],
            "               drive cache hits of their requests, by member:"
        );
        assert!(lines[3].starts_with("                   0: 0%, 10%, 20%, 30%,"));
        // Every member is on some line, in order: the indices that open the lines rise, and the
        // last line ends with member 255 (255 % 7 = 3).
        let opens: Vec<usize> = lines[3..]
            .iter()
            .map(|l| l.trim_start().split(':').next().unwrap().parse().unwrap())
            .collect();
        assert!(opens.windows(2).all(|w| w[0] < w[1]), "{opens:?}");
        assert!(lines.last().unwrap().ends_with(", 30%"), "{lines:?}");
        let shown: usize = lines[3..]
            .iter()
            .map(|l| l.split(": ").nth(1).unwrap().split(", ").count())
            .sum();
        assert_eq!(shown, 256);
    }

    #[test]
    fn two_equal_figures_are_written_out_and_three_are_grouped() {
        let items = grouped(&["5%", "5%", "6%", "6%", "6%"].map(String::from));
        assert_eq!(
            items,
            vec![
                ("5%".to_string(), 1),
                ("5%".to_string(), 1),
                ("3 x 6%".to_string(), 3)
            ]
        );
    }
}

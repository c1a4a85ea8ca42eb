//! Tables rendered as Markdown and HTML, and paper 002's Table I (`p_N / p_1`).

use std::collections::BTreeSet;

use crate::markdown::{self, Flow};
use crate::metrics::loss_event_rate_ratio;

/// A table of text cells with a caption. Rows shorter than the header are padded with empty
/// cells when rendered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Table {
    /// Caption (above the table).
    pub caption: String,
    /// Column headers.
    pub columns: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with a caption and column headers.
    pub fn new(caption: impl Into<String>, columns: Vec<String>) -> Table {
        Table {
            caption: caption.into(),
            columns,
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn row(mut self, cells: Vec<String>) -> Table {
        self.rows.push(cells);
        self
    }

    fn width(&self) -> usize {
        self.rows
            .iter()
            .map(Vec::len)
            .chain([self.columns.len()])
            .max()
            .unwrap_or(0)
    }

    /// GitHub-flavoured Markdown: the caption in bold, then the table. `|` in cells is
    /// escaped and newlines become spaces, so a cell can never break the table.
    pub fn to_markdown(&self) -> String {
        let width = self.width();
        let mut out = String::new();
        if !self.caption.is_empty() {
            out.push_str(&format!("**{}**\n\n", markdown_cell(&self.caption)));
        }
        let line = |cells: &[String]| {
            let mut text = String::from("|");
            for index in 0..width {
                let cell = cells.get(index).map(String::as_str).unwrap_or("");
                text.push_str(&format!(" {} |", markdown_cell(cell)));
            }
            text.push('\n');
            text
        };
        out.push_str(&line(&self.columns));
        out.push('|');
        for _ in 0..width {
            out.push_str("---|");
        }
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }

    /// An HTML `<table>` with a `<caption>`. The caption and every cell are Markdown rendered
    /// inline ([`markdown::to_html`]: no `<p>` wrapper, raw HTML escaped), as `report.md` shows
    /// them.
    pub fn to_html(&self) -> String {
        let width = self.width();
        let mut out = String::from("<table>\n");
        if !self.caption.is_empty() {
            out.push_str(&format!(
                "<caption>{}</caption>\n",
                markdown::to_html(&self.caption, Flow::Inline)
            ));
        }
        let line = |cells: &[String], tag: &str| {
            let mut text = String::from("<tr>");
            for index in 0..width {
                let cell = cells.get(index).map(String::as_str).unwrap_or("");
                text.push_str(&format!(
                    "<{tag}>{}</{tag}>",
                    markdown::to_html(cell, Flow::Inline)
                ));
            }
            text.push_str("</tr>\n");
            text
        };
        out.push_str("<thead>");
        out.push_str(&line(&self.columns, "th"));
        out.push_str("</thead>\n<tbody>\n");
        for row in &self.rows {
            out.push_str(&line(row, "td"));
        }
        out.push_str("</tbody>\n</table>\n");
        out
    }
}

/// Escapes `&`, `<`, `>`, `"` and `'` for HTML text and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match html_entity(c) {
            Some(entity) => out.push_str(entity),
            None => out.push(c),
        }
    }
    out
}

/// The entity that stands for `c` in HTML text and attribute values, `None` for a character
/// written as itself. (The double quote is spelt `\u{22}` so that no tool reading the source
/// takes the character literal for the start of a string.)
fn html_entity(c: char) -> Option<&'static str> {
    Some(match c {
        '&' => "&amp;",
        '<' => "&lt;",
        '>' => "&gt;",
        '\u{22}' => "&quot;",
        '\'' => "&#39;",
        _ => return None,
    })
}

/// A Markdown table cell: line breaks turned into spaces and every `|` escaped, so a cell can
/// never end early. A `|` the text already escapes (`\\|`) is escaped again after the
/// backslashes it follows are paired: a delimiter is a `|` after an even number of backslashes.
pub fn markdown_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut backslashes = 0usize;
    for c in text.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '|' => {
                if backslashes % 2 == 1 {
                    out.push('\\');
                }
                out.push_str("\\|");
            }
            _ => out.push(c),
        }
        backslashes = if c == '\\' { backslashes + 1 } else { 0 };
    }
    out
}

/// One measured loss event rate for paper 002's Table I.
#[derive(Debug, Clone, PartialEq)]
pub struct LossRateEntry {
    /// The row it belongs to, e.g. `2 flows, 250 ms`.
    pub row: String,
    /// Feedbacks per RTT of the run.
    pub feedbacks_per_rtt: u32,
    /// The loss event rate measured (e.g. the mean over the flows of their cumulative mean p).
    pub p: f64,
}

/// Paper 002's Table I: one row per `row` label (in first-seen order), one column per number
/// of feedbacks per RTT N > 1 (ascending), cells `p_N / p_1` with `precision` decimals.
/// A cell is `n/a` when that N was not run or the ratio is undefined (`p_1` = 0, no `N = 1`
/// entry for the row).
pub fn loss_rate_ratio_table(caption: &str, entries: &[LossRateEntry], precision: usize) -> Table {
    let mut rows: Vec<&str> = Vec::new();
    for entry in entries {
        if !rows.contains(&entry.row.as_str()) {
            rows.push(&entry.row);
        }
    }
    let feedbacks: BTreeSet<u32> = entries
        .iter()
        .map(|e| e.feedbacks_per_rtt)
        .filter(|&n| n > 1)
        .collect();
    let mut columns = vec!["scenario".to_string()];
    columns.extend(feedbacks.iter().map(|n| format!("p_{n}/p_1")));
    let mut table = Table::new(caption, columns);
    let find = |row: &str, n: u32| {
        entries
            .iter()
            .find(|e| e.row == row && e.feedbacks_per_rtt == n)
            .map(|e| e.p)
    };
    for row in rows {
        let mut cells = vec![row.to_string()];
        for &n in &feedbacks {
            let ratio = match (find(row, n), find(row, 1)) {
                (Some(p_n), Some(p_1)) => loss_event_rate_ratio(p_n, p_1),
                _ => None,
            };
            cells.push(ratio.map_or_else(|| "n/a".to_string(), |r| format!("{r:.precision$}")));
        }
        table.rows.push(cells);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_escapes_pipes_and_pads_rows() {
        let table = Table::new("T", vec!["a".into(), "b|c".into()]).row(vec!["x\ny".into()]);
        assert_eq!(
            table.to_markdown(),
            "**T**\n\n| a | b\\|c |\n|---|---|\n| x y |  |\n"
        );
    }

    #[test]
    fn html_escapes_every_cell() {
        let table = Table::new("<T>", vec!["a&b".into()]).row(vec!["\"q\" 'r' <i>".into()]);
        let html = table.to_html();
        assert!(html.contains("<caption>&lt;T&gt;</caption>"), "{html}");
        assert!(html.contains("<th>a&amp;b</th>"), "{html}");
        // Body text: quotes need no escaping, tags do.
        assert!(html.contains("<td>\"q\" 'r' &lt;i&gt;</td>"), "{html}");
    }

    #[test]
    fn html_cells_and_caption_are_inline_markdown() {
        let table =
            Table::new("Claims of `e000-loss`", vec!["claim".into(), "why".into()]).row(vec![
                "the claim **holds**".into(),
                "see `tfrc sim`<script>alert(1)</script>".into(),
            ]);
        let html = table.to_html();
        assert!(
            html.contains("<caption>Claims of <code>e000-loss</code></caption>"),
            "{html}"
        );
        assert!(
            html.contains("<td>the claim <strong>holds</strong></td>"),
            "{html}"
        );
        assert!(
            html.contains(
                "<td>see <code>tfrc sim</code>&lt;script&gt;alert(1)&lt;/script&gt;</td>"
            ),
            "{html}"
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<p>"), "cells are inline: {html}");
    }

    /// The cells of every row of the GFM table `markdown`, as pulldown-cmark (tables on) reads
    /// them: plain text per cell.
    fn parsed_cells(markdown: &str) -> Vec<Vec<String>> {
        use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
        let mut rows = Vec::new();
        let mut cell: Option<String> = None;
        for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
            match event {
                Event::Start(Tag::TableHead | Tag::TableRow) => rows.push(Vec::new()),
                Event::Start(Tag::TableCell) => cell = Some(String::new()),
                Event::End(TagEnd::TableCell) => {
                    let text = cell.take().unwrap_or_default();
                    rows.last_mut().expect("a row").push(text);
                }
                Event::Text(text) | Event::Code(text) => {
                    if let Some(cell) = &mut cell {
                        cell.push_str(&text);
                    }
                }
                _ => {}
            }
        }
        rows
    }

    #[test]
    fn a_pipe_or_line_break_in_a_cell_does_not_break_the_table() {
        let cells = [
            "a | b",
            "line\nbreak\r\nand\n\nparagraph",
            "`code | span`",
            "escaped \\| already",
            "backslash \\\\| then pipe",
        ];
        let mut table = Table::new("caption | with\npipe", vec!["x".into(), "y".into()]);
        for cell in cells {
            table = table.row(vec![cell.into(), "end".into()]);
        }
        let markdown = table.to_markdown();
        assert!(
            markdown.starts_with("**caption \\| with pipe**\n\n"),
            "{markdown}"
        );
        let rows = parsed_cells(&markdown);
        assert_eq!(rows.len(), 1 + cells.len(), "{markdown}");
        for row in &rows {
            assert_eq!(row.len(), 2, "{markdown}");
        }
        assert_eq!(rows[1][0], "a | b");
        assert_eq!(rows[2][0], "line break  and  paragraph");
        assert_eq!(rows[3][0], "code | span");
        // Every row ends with its second cell.
        assert!(rows[1..].iter().all(|row| row[1] == "end"), "{markdown}");

        // In HTML, a `|` is text and a line break stays inside its cell.
        let html = table.to_html();
        assert_eq!(html.matches("<td>").count(), 2 * cells.len(), "{html}");
        assert!(html.contains("<td>a | b</td>"), "{html}");
        assert!(
            html.contains("<td>line\nbreak\nand<br>paragraph</td>"),
            "{html}"
        );
    }

    #[test]
    fn table_one_ratios() {
        let entry = |row: &str, n, p| LossRateEntry {
            row: row.to_string(),
            feedbacks_per_rtt: n,
            p,
        };
        let entries = [
            entry("2 flows, 250 ms", 1, 0.02),
            entry("2 flows, 250 ms", 2, 0.021),
            entry("2 flows, 250 ms", 4, 0.018),
            entry("3 flows, 250 ms", 2, 0.03),
            entry("4 flows, 250 ms", 1, 0.0),
            entry("4 flows, 250 ms", 4, 0.01),
        ];
        let table = loss_rate_ratio_table("Table I", &entries, 2);
        assert_eq!(table.columns, vec!["scenario", "p_2/p_1", "p_4/p_1"]);
        assert_eq!(
            table.rows,
            vec![
                vec!["2 flows, 250 ms", "1.05", "0.90"],
                // No N = 1 run for this row.
                vec!["3 flows, 250 ms", "n/a", "n/a"],
                // p_1 = 0, and N = 2 was not run.
                vec!["4 flows, 250 ms", "n/a", "n/a"],
            ]
        );
    }
}

//! Markdown free text rendered as HTML for `index.html`.
//!
//! The report's free text (intro, setup, the paper's result, verdict explanations, figure
//! captions, table cells) is written as Markdown: `report.md` carries it as is, and
//! `index.html` renders it here with `pulldown-cmark` (CommonMark, no extensions), so that
//! `**holds**` and `` `tfrc sim` `` look the same in both files.
//!
//! The text comes from files users edit (`scenarios/claims.toml`), so it is not trusted as
//! HTML: raw HTML (blocks and inline tags) is shown as text, escaped, and links or images whose
//! address has a scheme other than `http`, `https` or `mailto` (e.g. `javascript:`) lose their
//! address and keep their text.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

/// Where the rendered text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Paragraphs (`<p>…</p>`, lists, …): text between blocks (intro, setup, the paper's
    /// result).
    Block,
    /// Inside an element that is already a line of text (a table cell, a caption, a verdict's
    /// explanation): the paragraphs' `<p>` wrappers are left out and consecutive paragraphs are
    /// separated by `<br>`, so the text does not open a block of its own.
    Inline,
}

/// `text` (Markdown) as HTML, with raw HTML escaped and unsafe link addresses dropped (see
/// the module documentation). The one renderer of every free text of `index.html`.
pub fn to_html(text: &str, flow: Flow) -> String {
    let mut events = Vec::new();
    // Per open link or image: whether its start tag was kept (its end tag follows suit).
    let mut links_kept: Vec<bool> = Vec::new();
    let mut paragraphs = 0usize;
    for event in Parser::new_ext(text, Options::empty()) {
        match event {
            // Raw HTML is shown, not interpreted.
            Event::Html(html) | Event::InlineHtml(html) => events.push(Event::Text(html)),
            Event::Start(Tag::HtmlBlock) | Event::End(TagEnd::HtmlBlock) => {}
            Event::Start(Tag::Paragraph) if flow == Flow::Inline => {
                if paragraphs > 0 {
                    events.push(Event::InlineHtml(CowStr::Borrowed("<br>")));
                }
                paragraphs += 1;
            }
            Event::End(TagEnd::Paragraph) if flow == Flow::Inline => {}
            Event::Start(tag @ (Tag::Link { .. } | Tag::Image { .. })) => {
                let url = match &tag {
                    Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => dest_url,
                    _ => unreachable!("matched above"),
                };
                let keep = safe_url(url);
                links_kept.push(keep);
                if keep {
                    events.push(Event::Start(tag));
                }
            }
            Event::End(end @ (TagEnd::Link | TagEnd::Image)) => {
                if links_kept.pop().unwrap_or(false) {
                    events.push(Event::End(end));
                }
            }
            other => events.push(other),
        }
    }
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    match flow {
        Flow::Block => html,
        // A line of text: no trailing newline of the last block.
        Flow::Inline => html.trim_end_matches('\n').to_string(),
    }
}

/// Whether a link or image address may go into the page: relative addresses and anchors, and
/// the `http`, `https` and `mailto` schemes.
fn safe_url(url: &str) -> bool {
    let url = url.trim_start();
    // A scheme is what comes before the first `:` when no `/`, `?` or `#` comes earlier.
    match url.find([':', '/', '?', '#']) {
        Some(index) if url.as_bytes()[index] == b':' => {
            let scheme = url[..index].to_ascii_lowercase();
            matches!(scheme.as_str(), "http" | "https" | "mailto")
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emphasis_and_code_are_rendered() {
        assert_eq!(
            to_html("the claim **holds** in `tfrc sim`", Flow::Inline),
            "the claim <strong>holds</strong> in <code>tfrc sim</code>"
        );
        assert_eq!(
            to_html("One *a*.\n\nTwo.", Flow::Block),
            "<p>One <em>a</em>.</p>\n<p>Two.</p>\n"
        );
    }

    #[test]
    fn inline_text_has_no_paragraph_wrapper() {
        assert_eq!(to_html("plain", Flow::Inline), "plain");
        assert_eq!(to_html("one\n\ntwo", Flow::Inline), "one<br>two");
        assert_eq!(to_html("", Flow::Inline), "");
    }

    #[test]
    fn raw_html_is_escaped() {
        let inline = to_html("a <script>alert(1)</script> b", Flow::Inline);
        assert_eq!(inline, "a &lt;script&gt;alert(1)&lt;/script&gt; b");
        let block = to_html("<script>\nalert(1)\n</script>\n\nafter", Flow::Block);
        assert!(!block.contains("<script"), "{block}");
        assert!(block.contains("&lt;script&gt;"), "{block}");
        assert!(block.contains("<p>after</p>"), "{block}");
        let attribute = to_html("<img src=x onerror=alert(1)>", Flow::Inline);
        assert!(!attribute.contains("<img"), "{attribute}");
    }

    #[test]
    fn only_safe_link_addresses_are_kept() {
        assert_eq!(
            to_html("[docs](docs/reproduce.md#x)", Flow::Inline),
            "<a href=\"docs/reproduce.md#x\">docs</a>"
        );
        assert_eq!(
            to_html(
                "[rfc](https://www.rfc-editor.org/rfc/rfc5348)",
                Flow::Inline
            ),
            "<a href=\"https://www.rfc-editor.org/rfc/rfc5348\">rfc</a>"
        );
        assert_eq!(
            to_html("[click](javascript:alert(1))", Flow::Inline),
            "click"
        );
        assert_eq!(
            to_html("[a ![b](JavaScript:x) c](#ok)", Flow::Inline),
            "<a href=\"#ok\">a b c</a>"
        );
        assert!(safe_url("e000-loss/a:b.png"));
        assert!(!safe_url(" data:text/html,x"));
    }
}

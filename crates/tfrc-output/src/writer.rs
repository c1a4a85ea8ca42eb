//! One writer for a run's three CSV files: rows go to the files, to memory, to both or nowhere.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;

use crate::{
    CsvLine, FlowRow, LinkRow, Rows, StateRow, COMPRESSED_SUFFIX, FLOWS_FILE, LINKS_FILE,
    STATE_FILE,
};

/// Which of a run's CSV files a row type belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFile {
    /// `flows.csv`.
    Flows,
    /// `state.csv`.
    State,
    /// `links.csv`.
    Links,
}

impl RowFile {
    /// The three files, in the order flows, state, links.
    pub const ALL: [RowFile; 3] = [RowFile::Flows, RowFile::State, RowFile::Links];

    /// The file name.
    pub fn name(self) -> &'static str {
        match self {
            RowFile::Flows => FLOWS_FILE,
            RowFile::State => STATE_FILE,
            RowFile::Links => LINKS_FILE,
        }
    }

    /// The name of its gzip-compressed form: `flows.csv.gz`, `state.csv.gz`, `links.csv.gz`.
    pub fn compressed_name(self) -> String {
        format!("{}{COMPRESSED_SUFFIX}", self.name())
    }

    /// The header line: the row type's field names, in order (see [`header`]).
    pub fn header(self) -> &'static str {
        header(self)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The header line of `file`: its row type's field names in order, as serde names them (the
/// same names a reader's `csv` + serde deserialization matches), so no list of column names is
/// kept by hand.
pub fn header(file: RowFile) -> &'static str {
    static HEADERS: [OnceLock<String>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    HEADERS[file.index()].get_or_init(|| match file {
        RowFile::Flows => field_names::<FlowRow>(),
        RowFile::State => field_names::<StateRow>(),
        RowFile::Links => field_names::<LinkRow>(),
    })
}

/// The header `csv` writes for `R`: its serde field names, comma-separated.
fn field_names<R: CsvRow>() -> String {
    let mut writer = csv::WriterBuilder::new()
        .has_headers(true)
        .from_writer(Vec::new());
    // Serializing a plain struct of numbers and strings into memory cannot fail.
    let _ = writer.serialize(R::default());
    let bytes = writer.into_inner().unwrap_or_default();
    String::from_utf8_lossy(&bytes)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// A row of one of the CSV files: how it is written, and what a reader gets back. Its header
/// is its serde field names ([`header`]); [`CsvRow::write_csv`] writes the cells in that order,
/// which the crate's tests check by reading every row back through the header.
pub trait CsvRow: Sized + Default + serde::Serialize {
    /// The file it goes in.
    const FILE: RowFile;
    /// Appends its cells to `line` (empty when called; the caller ends the line).
    fn write_csv(&self, line: &mut CsvLine);
    /// Writes it to `out` as one CSV line, built in `line` (a buffer kept from row to row).
    fn write_line(&self, out: &mut impl Write, line: &mut CsvLine) -> io::Result<()> {
        line.clear();
        self.write_csv(line);
        out.write_all(line.finish())
    }
    /// The row a reader parses back from [`CsvRow::write_csv`]'s text, bit for bit.
    fn into_written(self) -> Self;
    /// Its rows among a run's rows.
    fn rows_of(rows: &mut Rows) -> &mut Vec<Self>;
}

/// A file that could not be created or written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct WriteError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub source: io::Error,
}

/// Where a run's rows go: its CSV files in a directory (headers first), memory ([`Rows`], each
/// row exactly as its file reads back), both, or nowhere.
#[derive(Debug, Default)]
pub struct RunWriter {
    /// One writer per [`RowFile`] (by index; `None` for a file this writer does not write).
    files: Option<(Vec<Option<BufWriter<File>>>, PathBuf)>,
    memory: Option<Rows>,
    /// The line being written, its buffer kept from row to row.
    line: CsvLine,
}

impl RunWriter {
    /// Rows written to the three CSV files of `directory` (created if missing), if given.
    pub fn new(directory: Option<&Path>) -> Result<RunWriter, WriteError> {
        match directory {
            Some(directory) => RunWriter::with_files(directory, &RowFile::ALL),
            None => Ok(RunWriter::default()),
        }
    }

    /// Rows written to some of the CSV files of `directory` (created if missing): the testbed
    /// writes `links.csv` as the emulator runs and the other two at the end. A row of another
    /// file is an error.
    pub fn with_files(directory: &Path, files: &[RowFile]) -> Result<RunWriter, WriteError> {
        std::fs::create_dir_all(directory).map_err(|source| WriteError {
            path: directory.to_path_buf(),
            source,
        })?;
        let mut writers = Vec::with_capacity(RowFile::ALL.len());
        for file in RowFile::ALL {
            if !files.contains(&file) {
                writers.push(None);
                continue;
            }
            let path = directory.join(file.name());
            let created = File::create(&path).and_then(|handle| {
                let mut writer = BufWriter::with_capacity(1 << 16, handle);
                writeln!(writer, "{}", file.header()).map(|()| writer)
            });
            writers.push(Some(created.map_err(|source| WriteError { path, source })?));
        }
        Ok(RunWriter {
            files: Some((writers, directory.to_path_buf())),
            memory: None,
            line: CsvLine::default(),
        })
    }

    /// Also keeps every row in memory.
    pub fn keep_rows(&mut self) {
        self.memory.get_or_insert_with(Rows::default);
    }

    /// Whether rows go anywhere (building them can be skipped otherwise).
    pub fn is_recording(&self) -> bool {
        self.files.is_some() || self.memory.is_some()
    }

    /// Writes `row` to its file and keeps it, as configured.
    pub fn push<R: CsvRow>(&mut self, row: R) -> Result<(), WriteError> {
        if let Some((writers, directory)) = &mut self.files {
            let path = || directory.join(R::FILE.name());
            let writer = writers[R::FILE.index()]
                .as_mut()
                .ok_or_else(|| WriteError {
                    path: path(),
                    source: io::Error::other("this run writer does not write that file"),
                })?;
            row.write_line(writer, &mut self.line)
                .map_err(|source| WriteError {
                    path: path(),
                    source,
                })?;
        }
        if let Some(memory) = &mut self.memory {
            R::rows_of(memory).push(row.into_written());
        }
        Ok(())
    }

    /// Flushes the files and gives back the rows kept in memory, if any.
    pub fn finish(self) -> Result<Option<Rows>, WriteError> {
        if let Some((writers, directory)) = self.files {
            for (writer, file) in writers.into_iter().zip(RowFile::ALL) {
                let Some(mut writer) = writer else {
                    continue;
                };
                writer.flush().map_err(|source| WriteError {
                    path: directory.join(file.name()),
                    source,
                })?;
            }
        }
        Ok(self.memory)
    }
}

/// Replaces each of a run's CSV files found in `directory` by its gzip-compressed form
/// (`flows.csv` → `flows.csv.gz`, default level): a run kept for reference takes about a fifth
/// of the space, and [`open_row_file`] reads it back as the same text. The plain file is
/// removed once its compressed form is complete; a file that is not there is skipped.
pub fn compress_row_files(directory: &Path) -> Result<(), WriteError> {
    for file in RowFile::ALL {
        let plain = directory.join(file.name());
        if !plain.is_file() {
            continue;
        }
        let compressed = directory.join(file.compressed_name());
        let write_error = |source| WriteError {
            path: compressed.clone(),
            source,
        };
        let mut input = File::open(&plain).map_err(|source| WriteError {
            path: plain.clone(),
            source,
        })?;
        let output = File::create(&compressed).map_err(write_error)?;
        let mut encoder = GzEncoder::new(
            BufWriter::with_capacity(1 << 16, output),
            Compression::default(),
        );
        io::copy(&mut input, &mut encoder).map_err(write_error)?;
        encoder
            .finish()
            .and_then(|mut output| output.flush())
            .map_err(write_error)?;
        std::fs::remove_file(&plain).map_err(|source| WriteError {
            path: plain.clone(),
            source,
        })?;
    }
    Ok(())
}

/// Opens one of a run's CSV files in `directory` for reading: `FILE.csv` if it is there, else
/// `FILE.csv.gz`, decompressed as it is read, so a reader takes either form. Gives the path
/// opened, for messages, with the reader or the error; when neither file exists, the path is
/// the plain one and the error "not found".
pub fn open_row_file(
    directory: &Path,
    file: RowFile,
) -> (PathBuf, io::Result<Box<dyn Read + Send>>) {
    let plain = directory.join(file.name());
    let compressed = directory.join(file.compressed_name());
    if !plain.exists() && compressed.exists() {
        let reader = File::open(&compressed)
            .map(|handle| Box::new(MultiGzDecoder::new(handle)) as Box<dyn Read + Send>);
        return (compressed, reader);
    }
    let reader = File::open(&plain).map(|handle| Box::new(handle) as Box<dyn Read + Send>);
    (plain, reader)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(directory: &Path, file: RowFile) -> (PathBuf, String) {
        let (path, reader) = open_row_file(directory, file);
        let mut text = String::new();
        reader
            .expect("opens")
            .read_to_string(&mut text)
            .expect("reads");
        (path, text)
    }

    /// Compressed files read back as the text written, under their `.gz` names, and replace
    /// the plain files.
    #[test]
    fn compressed_files_read_back_as_written() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let mut writer = RunWriter::new(Some(directory.path())).expect("writer");
        for index in 0..200 {
            let row = FlowRow {
                time_s: f64::from(index) * 0.5,
                flow: "a".into(),
                ..FlowRow::default()
            };
            writer.push(row).expect("row written");
        }
        writer.push(LinkRow::default()).expect("row written");
        writer.finish().expect("flushed");
        let plain: Vec<(PathBuf, String)> = RowFile::ALL
            .iter()
            .map(|&file| read_all(directory.path(), file))
            .collect();
        assert_eq!(plain[0].0, directory.path().join("flows.csv"));

        compress_row_files(directory.path()).expect("compressed");
        // Nothing left to compress: a second pass changes nothing.
        compress_row_files(directory.path()).expect("compressed again");
        for (&file, (_, text)) in RowFile::ALL.iter().zip(&plain) {
            assert!(!directory.path().join(file.name()).exists(), "{file:?}");
            let gz = directory.path().join(file.compressed_name());
            let bytes = std::fs::read(&gz).expect("compressed file");
            assert_eq!(&bytes[..2], &[0x1f, 0x8b], "{}: gzip magic", gz.display());
            assert_eq!(read_all(directory.path(), file), (gz, text.clone()));
        }
        assert!(
            plain[0].1.len()
                > std::fs::read(directory.path().join("flows.csv.gz"))
                    .unwrap()
                    .len()
        );
    }

    #[test]
    fn a_missing_file_is_named_by_its_plain_name() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let (path, reader) = open_row_file(directory.path(), RowFile::State);
        assert_eq!(path, directory.path().join("state.csv"));
        assert_eq!(
            reader.err().map(|error| error.kind()),
            Some(io::ErrorKind::NotFound)
        );
    }
}

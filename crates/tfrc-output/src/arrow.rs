//! Arrow record batches of a run (feature `arrow`): the tables the Python package hands to
//! pandas and `tfrc sweep` writes as Parquet.
//!
//! The columns are traced from the row types' serde fields ([`crate::FlowRow`],
//! [`crate::StateRow`], [`crate::LinkRow`], [`crate::FlowSummary`]), so a table has its CSV
//! file's (or `summary.json`'s) columns, in the same order, with the same names: the schema
//! stays defined once. Integers are `uint64`, numbers `float64`, names `utf8`, and an empty
//! CSV cell is a null. Rows kept in memory hold
//! exactly what their files read back ([`crate::CsvRow::into_written`]), so a table holds the
//! numbers of its CSV file.
//!
//! [`with_leading_columns`] puts columns that are constant over a run (its id, seed, the
//! sweep's parameters) in front of a table, so that the tables of many runs stack into one.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, RecordBatchOptions, StringArray, UInt64Array,
};
use arrow_schema::{ArrowError, DataType, Field, FieldRef, Schema};
use serde::{Deserialize, Serialize};
use serde_arrow::schema::{SchemaLike, TracingOptions};

use crate::Rows;

/// A table of rows of type `T`: one column per serde field, in declaration order.
///
/// # Errors
/// When a value cannot be written in its column (not expected for the output row types).
pub fn table<T>(rows: &[T]) -> Result<RecordBatch, ArrowError>
where
    T: Serialize + for<'de> Deserialize<'de>,
{
    let fields = fields_of::<T>()?;
    serde_arrow::to_record_batch(&fields, &rows).map_err(|error| {
        ArrowError::ExternalError(Box::new(std::io::Error::other(error.to_string())))
    })
}

/// The columns of a table of `T` rows.
///
/// # Errors
/// When `T` has a field type Arrow cannot hold (not expected for the output row types).
///
/// A fieldless enum ([`crate::FlowKind`]) is a `utf8` column of its names, as the strings it
/// replaced were: traced as a string dictionary, then declared plain `utf8` (its values
/// serialize as strings).
pub fn fields_of<T>() -> Result<Vec<FieldRef>, ArrowError>
where
    T: for<'de> Deserialize<'de>,
{
    let options = TracingOptions::default()
        .strings_as_large_utf8(false)
        .enums_without_data_as_strings(true);
    let traced = Vec::<FieldRef>::from_type::<T>(options)
        .map_err(|error| ArrowError::SchemaError(error.to_string()))?;
    Ok(traced
        .into_iter()
        .map(|field| match field.data_type() {
            DataType::Dictionary(_, values) if **values == DataType::Utf8 => Arc::new(
                Field::new(field.name(), DataType::Utf8, field.is_nullable())
                    .with_metadata(field.metadata().clone()),
            ),
            _ => field,
        })
        .collect())
}

/// The three tables of a run's rows: `flows.csv`, `state.csv` and `links.csv`, in that order.
///
/// # Errors
/// As [`table`].
pub fn run_tables(rows: &Rows) -> Result<[RecordBatch; 3], ArrowError> {
    Ok([
        table(&rows.flows)?,
        table(&rows.states)?,
        table(&rows.links)?,
    ])
}

/// A value repeated down a column ([`with_leading_columns`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Constant {
    /// An `int64` column.
    Integer(i64),
    /// A `uint64` column (seeds).
    Unsigned(u64),
    /// A `float64` column; `None` is a null.
    Number(Option<f64>),
    /// A `utf8` column.
    Text(String),
}

impl Constant {
    fn data_type(&self) -> DataType {
        match self {
            Constant::Integer(_) => DataType::Int64,
            Constant::Unsigned(_) => DataType::UInt64,
            Constant::Number(_) => DataType::Float64,
            Constant::Text(_) => DataType::Utf8,
        }
    }

    fn repeated(&self, rows: usize) -> ArrayRef {
        match self {
            Constant::Integer(value) => Arc::new(Int64Array::from(vec![*value; rows])),
            Constant::Unsigned(value) => Arc::new(UInt64Array::from(vec![*value; rows])),
            Constant::Number(value) => Arc::new(Float64Array::from(vec![*value; rows])),
            Constant::Text(value) => Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                value, rows,
            ))),
        }
    }
}

/// `batch` with `columns` (name, value) in front, each value repeated on every row.
///
/// # Errors
/// When a leading column has the name of one of `batch`'s columns.
pub fn with_leading_columns(
    batch: &RecordBatch,
    columns: &[(String, Constant)],
) -> Result<RecordBatch, ArrowError> {
    let rows = batch.num_rows();
    let mut fields: Vec<FieldRef> = Vec::with_capacity(columns.len() + batch.num_columns());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(fields.capacity());
    for (name, value) in columns {
        if batch.schema().column_with_name(name).is_some() {
            return Err(ArrowError::SchemaError(format!(
                "column {name:?} is already in the table"
            )));
        }
        let nullable = matches!(value, Constant::Number(None));
        fields.push(Arc::new(Field::new(name, value.data_type(), nullable)));
        arrays.push(value.repeated(rows));
    }
    fields.extend(batch.schema().fields().iter().cloned());
    arrays.extend(batch.columns().iter().cloned());
    RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        arrays,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
}

/// The names of the columns of a table of `T` rows.
///
/// # Errors
/// As [`fields_of`].
pub fn column_names<T>() -> Result<Vec<String>, ArrowError>
where
    T: for<'de> Deserialize<'de>,
{
    Ok(fields_of::<T>()?
        .iter()
        .map(|field| field.name().clone())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{header, CsvRow, FlowKind, FlowRow, FlowSummary, LinkRow, RowFile, StateRow};
    use arrow_array::Array;

    fn sample_rows() -> Rows {
        let mut state = StateRow::empty(1.0, "a", FlowKind::Tfrc);
        state.x_bps = Some(1_000_000.04);
        state.p = Some(0.012_345_678_9);
        Rows {
            flows: vec![FlowRow::from_counts(
                1.0,
                ("a".into(), FlowKind::Tfrc),
                [125_000, 100_000, 96_875],
                [125, 100],
                1.0,
            )
            .into_written()],
            states: vec![state.into_written()],
            links: vec![LinkRow {
                time_s: 1.0,
                from: "r1".into(),
                to: "r2".into(),
                utilization: Some(0.5),
                drops_in: None,
                ..LinkRow::default()
            }],
        }
    }

    #[test]
    fn tables_have_the_csv_columns_in_order() {
        let [flows, states, links] = run_tables(&sample_rows()).unwrap();
        let names = |batch: &RecordBatch| -> String {
            batch
                .schema()
                .fields()
                .iter()
                .map(|field| field.name().as_str())
                .collect::<Vec<_>>()
                .join(",")
        };
        assert_eq!(names(&flows), header(RowFile::Flows));
        assert_eq!(names(&states), header(RowFile::State));
        assert_eq!(names(&links), header(RowFile::Links));
        assert_eq!(flows.num_rows(), 1);
        // The flow kind is a plain utf8 column of its name, as when it was a String.
        for batch in [&flows, &states] {
            let schema = batch.schema();
            let (index, field) = schema.column_with_name("kind").unwrap();
            assert_eq!(field.data_type(), &DataType::Utf8);
            assert!(!field.is_nullable());
            let kinds = batch
                .column(index)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap();
            assert_eq!(kinds.value(0), "tfrc");
        }
    }

    #[test]
    fn empty_cells_are_nulls_and_numbers_are_the_row_values() {
        let rows = sample_rows();
        let [flows, states, links] = run_tables(&rows).unwrap();
        let float = |batch: &RecordBatch, name: &str| {
            batch
                .column_by_name(name)
                .unwrap()
                .as_any()
                .downcast_ref::<Float64Array>()
                .unwrap()
                .clone()
        };
        assert_eq!(float(&flows, "recv_kbps").value(0), 800.0);
        assert_eq!(
            float(&states, "x_bps").value(0),
            rows.states[0].x_bps.unwrap()
        );
        assert_eq!(float(&states, "p").value(0), 0.012_345_678_9);
        assert!(float(&states, "cwnd").is_null(0));
        assert!(links.column_by_name("drops_in").unwrap().is_null(0));
        let sent = flows
            .column_by_name("sent_bytes")
            .unwrap()
            .as_any()
            .downcast_ref::<UInt64Array>()
            .unwrap()
            .value(0);
        assert_eq!(sent, 125_000);
    }

    #[test]
    fn leading_columns_repeat_on_every_row_and_refuse_a_taken_name() {
        let rows = Rows {
            flows: vec![FlowRow::default(); 3],
            ..Rows::default()
        };
        let [flows, _, _] = run_tables(&rows).unwrap();
        let led = with_leading_columns(
            &flows,
            &[
                ("seed".into(), Constant::Unsigned(7)),
                ("buffer".into(), Constant::Text("20".into())),
                ("rtt".into(), Constant::Number(None)),
            ],
        )
        .unwrap();
        assert_eq!(led.num_rows(), 3);
        assert_eq!(led.num_columns(), flows.num_columns() + 3);
        assert_eq!(led.schema().field(0).name(), "seed");
        let seeds = led
            .column(0)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .unwrap();
        assert_eq!(seeds.values().to_vec(), vec![7, 7, 7]);
        assert_eq!(led.column(2).null_count(), 3);
        let clash = with_leading_columns(&flows, &[("flow".into(), Constant::Integer(1))]);
        assert!(clash.unwrap_err().to_string().contains("\"flow\""));
    }

    #[test]
    fn a_flow_summary_table_has_the_summary_fields() {
        let names = column_names::<FlowSummary>().unwrap();
        assert_eq!(names.first().map(String::as_str), Some("name"));
        assert!(names.iter().any(|name| name == "delay_p99_s"));
    }
}

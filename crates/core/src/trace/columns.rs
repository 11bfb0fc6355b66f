//! A table of rows kept as columns, declared once: [`columns!`] writes the struct and what
//! every such table needs from its column list — its length, the bytes a row takes, its
//! rows reordered or picked — so that a new column is one line, not one per method.

/// Declares a struct whose `pub NAME: Vec<T>` fields are columns of one table, `start`
/// (`Vec<i64>`) first (every column as long as it, or left empty where a column is
/// optional), and, in an `others { … }` block after it, fields that are not rows. Gives
/// `ROW_BYTES`, `len`, `column_bytes`, `columns_agree`, `permute_rows` (an empty column
/// stays empty), `select_rows` (the others copied) and `sort_by_start` ([`start_order`]).
macro_rules! columns {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(#[$start_meta:meta])* pub start: Vec<i64>,
            $( $(#[$column_meta:meta])* pub $column:ident : Vec<$ty:ty>, )+
        }
        $( others {
            $( $(#[$other_meta:meta])* pub $other:ident : $other_ty:ty, )*
        } )?
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(#[$start_meta])* pub start: Vec<i64>,
            $( $(#[$column_meta])* pub $column: Vec<$ty>, )+
            $( $( $(#[$other_meta])* pub $other: $other_ty, )* )?
        }

        impl $name {
            /// Bytes a row takes in the columns.
            pub const ROW_BYTES: usize = std::mem::size_of::<i64>()
                $( + std::mem::size_of::<$ty>() )+;

            /// How many rows: the length of `start`.
            pub fn len(&self) -> usize {
                self.start.len()
            }

            /// Bytes the rows take in the columns, an empty optional column taking none.
            pub fn column_bytes(&self) -> usize {
                self.start.len() * std::mem::size_of::<i64>()
                    $( + self.$column.len() * std::mem::size_of::<$ty>() )+
            }

            /// Whether every column is as long as `start`, or empty where `may_be_empty`
            /// names it (an optional column): a table read back from a file is checked
            /// before a row is indexed.
            pub fn columns_agree(&self, may_be_empty: &[&str]) -> bool {
                let n = self.len();
                true $(
                    && (self.$column.len() == n
                        || (self.$column.is_empty()
                            && may_be_empty.contains(&stringify!($column))))
                )+
            }

            /// Every column reordered, `column[i] = old[order[i]]`; an optional column left
            /// empty stays empty.
            pub fn permute_rows(&mut self, order: &[u32]) {
                $crate::trace::permute(&mut self.start, order);
                $(
                    if !self.$column.is_empty() {
                        $crate::trace::permute(&mut self.$column, order);
                    }
                )+
            }

            /// Every row reordered by `start` (stable, so equal starts keep their order).
            pub fn sort_by_start(&mut self) {
                if let Some(order) = $crate::trace::start_order(&self.start) {
                    self.permute_rows(&order);
                }
            }

            /// The rows at `indices`, in that order (an empty column stays empty), the
            /// fields that are not rows copied.
            pub fn select_rows(&self, indices: &[usize]) -> Self {
                Self {
                    start: indices.iter().map(|&i| self.start[i]).collect(),
                    $(
                        $column: if self.$column.is_empty() {
                            Vec::new()
                        } else {
                            indices.iter().map(|&i| self.$column[i]).collect()
                        },
                    )+
                    $( $( $other: self.$other.clone(), )* )?
                }
            }
        }
    };
}

pub(crate) use columns;

/// The order that sorts rows by `start` (stable: equal starts keep their order), or `None`
/// when they are sorted already.
pub fn start_order(start: &[i64]) -> Option<Vec<u32>> {
    if start.is_sorted() {
        return None;
    }
    let mut order: Vec<u32> = (0..start.len() as u32).collect();
    order.sort_by_key(|&i| start[i as usize]);
    Some(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    columns! {
        #[derive(Debug, Default, Clone, PartialEq)]
        pub struct Table {
            pub start: Vec<i64>,
            pub tag: Vec<u8>,
            pub optional: Vec<u32>,
        }
        others {
            pub names: Vec<String>,
        }
    }

    #[test]
    fn rows_move_together_and_an_empty_column_stays_empty() {
        assert_eq!(Table::ROW_BYTES, 8 + 1 + 4);
        let mut t = Table {
            start: vec![30, 10, 20, 10],
            tag: vec![3, 1, 2, 4],
            optional: Vec::new(),
            names: vec!["kept".into()],
        };
        assert_eq!(t.len(), 4);
        t.sort_by_start();
        assert_eq!(
            (t.start.clone(), t.tag.clone()),
            (vec![10, 10, 20, 30], vec![1, 4, 2, 3])
        );
        assert!(t.optional.is_empty());
        assert_eq!(start_order(&t.start), None);
        let picked = t.select_rows(&[3, 0]);
        assert_eq!((picked.start, picked.tag), (vec![30, 10], vec![3, 1]));
        assert_eq!(picked.names, t.names);
    }

    #[test]
    fn columns_agree_when_each_is_as_long_as_start_or_an_optional_one_is_empty() {
        let mut t = Table {
            start: vec![1, 2],
            tag: vec![1, 2],
            optional: vec![5, 6],
            names: Vec::new(),
        };
        assert!(t.columns_agree(&[]));
        assert_eq!(t.column_bytes(), 2 * Table::ROW_BYTES);
        t.optional.clear();
        assert_eq!(
            t.column_bytes(),
            2 * (8 + 1),
            "an empty column takes nothing"
        );
        assert!(!t.columns_agree(&[]), "an empty column not named optional");
        assert!(t.columns_agree(&["optional"]));
        t.optional = vec![5];
        assert!(
            !t.columns_agree(&["optional"]),
            "optional, but neither empty nor full"
        );
        t.optional.clear();
        t.tag.pop();
        assert!(!t.columns_agree(&["optional"]), "a short column");
    }
}

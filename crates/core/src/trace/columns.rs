//! A table of rows kept as columns, declared once: [`columns!`] writes the struct and what
//! every such table needs from its column list — its length, the bytes a row takes, its
//! rows reordered or picked — so that a new column is one line, not one per method.

/// Declares a struct whose `pub NAME: Vec<T>` fields are columns of one table (every
/// column as long as the first, or left empty where a column is optional), and, in an
/// `others { … }` block after it, fields that are not rows. Gives `ROW_BYTES`, `len`,
/// `permute_rows` (an empty column stays empty) and `select_rows` (the others copied);
/// `sort_by_start` where the first column is `start` ([`start_order`]).
macro_rules! columns {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$column_meta:meta])* pub $column:ident : Vec<$ty:ty>, )+
        }
        $( others {
            $( $(#[$other_meta:meta])* pub $other:ident : $other_ty:ty, )*
        } )?
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$column_meta])* pub $column: Vec<$ty>, )+
            $( $( $(#[$other_meta])* pub $other: $other_ty, )* )?
        }

        impl $name {
            /// Bytes a row takes in the columns.
            pub const ROW_BYTES: usize = 0 $( + std::mem::size_of::<$ty>() )+;

            /// How many rows: the first column's length.
            pub fn len(&self) -> usize {
                [$( self.$column.len() ),+][0]
            }

            /// Every column reordered, `column[i] = old[order[i]]`; an optional column left
            /// empty stays empty.
            pub fn permute_rows(&mut self, order: &[u32]) {
                $(
                    if !self.$column.is_empty() {
                        $crate::trace::permute(&mut self.$column, order);
                    }
                )+
            }

            /// The rows at `indices`, in that order (an empty column stays empty), the
            /// fields that are not rows copied.
            pub fn select_rows(&self, indices: &[usize]) -> Self {
                Self {
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
        let order = start_order(&t.start).expect("unsorted");
        t.permute_rows(&order);
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
}

import type { ReactNode } from "react";

import { formatNumber } from "../format";
import { usePagination } from "../hooks/use-pagination";
import { useSort } from "../hooks/use-sort";
import type { SortDirection } from "../hooks/use-sort";

export interface Column<T> {
  key: keyof T;
  header: string;
  numeric?: boolean;
  render?: (row: T) => ReactNode;
}

export interface DataTableProps<T> {
  rows: T[];
  columns: Column<T>[];
  pageSize?: number;
  initialDirection?: SortDirection;
}

export function DataTable<T>({ rows, columns, pageSize = 10, initialDirection = "asc" }: DataTableProps<T>) {
  const { sorted, sort, sortBy } = useSort(rows, { key: columns[0].key, direction: initialDirection });
  const { page, pages, visible, next, previous } = usePagination(sorted, pageSize);

  const cell = (row: T, column: Column<T>): ReactNode => {
    if (column.render) {
      return column.render(row);
    }
    const value = row[column.key];
    return typeof value === "number" ? formatNumber(value) : String(value);
  };

  return (
    <div className="overflow-x-auto">
      <table className="w-full text-sm">
        <thead>
          <tr>
            {columns.map((column) => (
              <th
                key={String(column.key)}
                className={column.numeric ? "text-right" : "text-left"}
                aria-sort={sort.key === column.key ? (sort.direction === "asc" ? "ascending" : "descending") : "none"}
                onClick={() => sortBy(column.key)}
              >
                {column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {visible.map((row, index) => (
            <tr key={index} className="border-t">
              {columns.map((column) => (
                <td key={String(column.key)} className={column.numeric ? "text-right" : "text-left"}>
                  {cell(row, column)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      <div className="mt-2 flex items-center justify-end gap-2 text-xs">
        <button onClick={previous} disabled={page === 1}>
          Previous
        </button>
        <span>
          {page} / {pages}
        </span>
        <button onClick={next} disabled={page === pages}>
          Next
        </button>
      </div>
    </div>
  );
}

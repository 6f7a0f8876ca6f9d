const compact = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });
const plain = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

/** A number for display: 1234 → "1,234", 1234567 → "1.2M" when compact. */
export function formatNumber(value: number, options: { compact?: boolean } = {}): string {
  if (!Number.isFinite(value)) {
    return "–";
  }
  return options.compact ? compact.format(value) : plain.format(value);
}

/** An amount of money in a currency, e.g. "$1,234.50". */
export function formatCurrency(value: number, currency = "USD"): string {
  return new Intl.NumberFormat("en-US", { style: "currency", currency }).format(value);
}

/** A ratio as a signed percentage: 0.125 → "+12.5%". */
export function formatPercent(ratio: number): string {
  const sign = ratio > 0 ? "+" : "";
  return `${sign}${(ratio * 100).toFixed(1)}%`;
}

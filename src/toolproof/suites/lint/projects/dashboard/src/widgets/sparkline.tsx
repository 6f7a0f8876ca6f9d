import { useMemo } from "react";

export interface SparklineProps {
  values: number[];
  width?: number;
  height?: number;
  stroke?: string;
}

export function Sparkline({ values, width = 120, height = 32, stroke = "currentColor" }: SparklineProps) {
  const path = useMemo(() => {
    if (values.length < 2) {
      return "";
    }
    const low = Math.min(...values);
    const span = Math.max(...values) - low || 1;
    const step = width / (values.length - 1);
    return values
      .map((value, i) => {
        const x = (i * step).toFixed(1);
        const y = (height - ((value - low) / span) * height).toFixed(1);
        return `${i === 0 ? "M" : "L"}${x},${y}`;
      })
      .join(" ");
  }, [values, width, height]);

  return (
    <svg width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img">
      <path d={path} fill="none" stroke={stroke} strokeWidth={1.5} />
    </svg>
  );
}

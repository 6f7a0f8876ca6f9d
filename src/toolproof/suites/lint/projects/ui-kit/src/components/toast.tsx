import { useEffect, useState } from "react";

import { cn } from "../lib/utils";

export type ToastVariant = "info" | "success" | "error";

export interface ToastProps {
  message: string;
  variant?: ToastVariant;
  durationMs?: number;
  onDismiss?: () => void;
}

const tones: Record<ToastVariant, string> = {
  info: "border-blue-200 bg-blue-50 text-blue-900",
  success: "border-green-200 bg-green-50 text-green-900",
  error: "border-red-200 bg-red-50 text-red-900",
};

export function Toast({ message, variant = "info", durationMs = 4000, onDismiss }: ToastProps) {
  const [visible, setVisible] = useState(true);

  useEffect(() => {
    const timer = window.setTimeout(() => {
      setVisible(false);
      onDismiss?.();
    }, durationMs);
    return () => window.clearTimeout(timer);
  }, [durationMs, onDismiss]);

  if (!visible) {
    return null;
  }
  return (
    <div role="status" className={cn("rounded-md border px-4 py-3 text-sm shadow", tones[variant])}>
      {message}
    </div>
  );
}

// SPDX-License-Identifier: GPL-2.0-or-later
// The Findings view: a filter bar (text, minimum severity, code, stream), the findings table
// (findings_model.h), a "shown of total" count, and under the table the current finding's
// whole explanation, wrapped (the table's message column is cut to its width). Selecting a finding
// emits its frame, stream and direction; the main window focuses that frame in every view.
#pragma once

#include <QWidget>
#include <optional>

#include "snapshot.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QTableView;
class QTextBrowser;

namespace ddpscope::gui {

class FindingsFilterProxy;
class FindingsModel;

class FindingsPage : public QWidget {
  Q_OBJECT
 public:
  explicit FindingsPage(QWidget* parent = nullptr);
  void setSnapshot(SnapshotPtr snap);
  // Selects the finding (row of FindingsModel) when the filters show it (emits findingSelected).
  void selectFinding(int findingRow);
  // Selects the first finding shown at `frame`, unless the current one is at it (no signal).
  void showFrame(std::uint64_t frame);
  // Focuses the text filter with its text selected (View › Filter Findings).
  void focusFilter();
  // Filters as the combos do: empty code / stream -1 for all.
  void setCodeFilter(const QString& code);
  void setStreamFilter(int stream);

  FindingsModel* model() const { return model_; }
  FindingsFilterProxy* proxy() const { return proxy_; }
  QTableView* view() const { return view_; }
  QLineEdit* filterEdit() const { return filter_; }
  QComboBox* severityCombo() const { return severity_; }
  QComboBox* codeCombo() const { return code_; }
  QComboBox* streamCombo() const { return stream_; }
  QString countText() const;
  QTextBrowser* detailPane() const { return detail_; }
  // What the detail pane shows for the finding (row of FindingsModel), as plain text.
  QString detailText(int findingRow) const;

 signals:
  void findingSelected(quint64 frame, int stream, int direction);
  void findingActivated();

 private:
  void populateFilters();
  void updateCount();
  void updateDetail();

  SnapshotPtr snap_;
  FindingsModel* model_ = nullptr;
  FindingsFilterProxy* proxy_ = nullptr;
  QTableView* view_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QComboBox* severity_ = nullptr;
  QComboBox* code_ = nullptr;
  QComboBox* stream_ = nullptr;
  QLabel* count_ = nullptr;
  QTextBrowser* detail_ = nullptr;
  bool quiet_ = false;  // selection changes made by showFrame
};

}  // namespace ddpscope::gui

// SPDX-License-Identifier: GPL-2.0-or-later
// The Bytes page: a region selector, "Go to TO", and the hex view (BytesModel) laid out like
// Wireshark's bytes pane with columns sized to their content in a monospaced font. Selecting
// a range of octets names the frames that placed it; activating an octet focuses its frame.
#pragma once

#include <QWidget>

#include "bytes_model.h"
#include "snapshot.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QTableView;

namespace ddpscope::gui {

class BytesPage : public QWidget {
  Q_OBJECT
 public:
  explicit BytesPage(QWidget* parent = nullptr);
  BytesModel* model() const { return model_; }
  QTableView* view() const { return view_; }
  QComboBox* regionCombo() const { return combo_; }
  QLabel* selectionLabel() const { return selection_; }

  void setRegion(SnapshotPtr snap, int region);
  void showFrame(std::uint64_t frame);
  // Selects and shows the octet at `to`; false when no row holds it.
  bool goToTo(std::uint64_t to);
  // Text of the frames that placed the selected octets.
  QString selectionText() const { return selectionText_; }

 signals:
  void regionChosen(int region);
  void frameActivated(quint64 frame);
  void exportRequested();

 private:
  void sizeColumns();
  void updateSelection();

  QComboBox* combo_ = nullptr;
  QLabel* info_ = nullptr;
  QLineEdit* goto_ = nullptr;
  QLabel* selection_ = nullptr;
  BytesModel* model_ = nullptr;
  QTableView* view_ = nullptr;
  QString selectionText_;
};

}  // namespace ddpscope::gui

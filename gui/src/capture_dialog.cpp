// SPDX-License-Identifier: GPL-2.0-or-later
#include "capture_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QToolButton>

#include "ddpscope/capture/live_capture.h"

namespace ddpscope::gui {

bool parsePorts(const QString& text, QList<quint16>& ports) {
  ports.clear();
  const auto tokens = text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts);
  for (const QString& t : tokens) {
    bool ok = false;
    const uint p = t.toUInt(&ok);
    if (!ok || p == 0 || p > 65535) return false;
    ports << quint16(p);
  }
  return true;
}

bool parseEndpoints(const QString& text, std::vector<net::Endpoint>& out, QString* bad) {
  out.clear();
  const auto tokens = text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts);
  for (const QString& t : tokens) {
    const qsizetype colon = t.lastIndexOf(QLatin1Char(':'));
    QString host = colon > 0 ? t.left(colon) : QString();
    if (host.startsWith(QLatin1Char('[')) && host.endsWith(QLatin1Char(']')))
      host = host.mid(1, host.size() - 2);
    bool ok = false;
    const uint port = colon > 0 ? t.mid(colon + 1).toUInt(&ok) : 0;
    const auto addr = net::Address::parse(host.toStdString());
    if (!ok || !addr || port == 0 || port > 65535) {
      if (bad) *bad = t;
      return false;
    }
    out.push_back(net::Endpoint{*addr, static_cast<std::uint16_t>(port)});
  }
  return true;
}

QString endpointsText(const std::vector<net::Endpoint>& endpoints) {
  QStringList parts;
  for (const net::Endpoint& e : endpoints)
    parts << QString::fromStdString(e.to_string());
  return parts.join(QStringLiteral(", "));
}

CaptureDialog::CaptureDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Capture"));
  auto* form = new QFormLayout(this);

  interface_ = new QComboBox;
  interface_->setEditable(true);  // an interface libpcap does not list can still be typed
  interface_->setAccessibleName(tr("Interface"));
  std::string err;
  for (const auto& i : capture::list_interfaces(err)) {
    QString label = QString::fromStdString(i.name);
    if (!i.description.empty())
      label += QStringLiteral(" — ") + QString::fromStdString(i.description);
    interface_->addItem(QString::fromStdString(i.name), label);
    interface_->setItemData(interface_->count() - 1, label, Qt::ToolTipRole);
  }
  if (interface_->findText(QStringLiteral("lo")) < 0) interface_->addItem(QStringLiteral("lo"));
  form->addRow(tr("&Interface:"), interface_);
  if (!err.empty())
    form->addRow(QString(),
                 new QLabel(tr("Interfaces not listed: %1").arg(QString::fromStdString(err))));

  filter_ = new QLineEdit;
  filter_->setPlaceholderText(tr("BPF, e.g. tcp port 4420 (empty: everything)"));
  filter_->setAccessibleName(tr("Capture filter"));
  filter_->setClearButtonEnabled(true);
  form->addRow(tr("Capture &filter:"), filter_);
  filter_error_ = new QLabel;
  filter_error_->setWordWrap(true);
  filter_error_->setStyleSheet(QStringLiteral("color: #c62828"));
  filter_error_->hide();
  form->addRow(QString(), filter_error_);

  auto* save_row = new QHBoxLayout;
  save_ = new QCheckBox(tr("&Save to:"));
  save_path_ = new QLineEdit;
  save_path_->setPlaceholderText(tr("capture.pcap"));
  save_path_->setAccessibleName(tr("Savefile"));
  auto* browse_button = new QToolButton;
  browse_button->setText(tr("…"));
  browse_button->setAccessibleName(tr("Choose savefile"));
  save_row->addWidget(save_);
  save_row->addWidget(save_path_, 1);
  save_row->addWidget(browse_button);
  form->addRow(tr("Savefile:"), save_row);

  ports_ = new QLineEdit;
  ports_->setPlaceholderText(tr("ports of streams already running, e.g. 4420"));
  ports_->setToolTip(
      tr("Streams on these TCP ports are analysed without an MPA handshake "
         "(as ddpscope analyze --port)"));
  ports_->setAccessibleName(tr("Mid-stream ports"));
  form->addRow(tr("&Mid-stream ports:"), ports_);
  ports_error_ = new QLabel(tr("Ports are numbers 1–65535, separated by commas"));
  ports_error_->setStyleSheet(QStringLiteral("color: #c62828"));
  ports_error_->hide();
  form->addRow(QString(), ports_error_);
  auto* hint_row = new QHBoxLayout;
  crc_ = new QComboBox;
  crc_->addItem(tr("CRC: find it"));  // index 0: auto
  crc_->addItem(tr("CRC in use"));
  crc_->addItem(tr("No CRC"));
  crc_->setToolTip(tr("For the mid-stream ports, as ddpscope analyze --mid-stream-crc"));
  markers_ = new QCheckBox(tr("Mar&kers in use"));
  hint_row->addWidget(crc_);
  hint_row->addWidget(markers_);
  hint_row->addStretch(1);
  form->addRow(QString(), hint_row);
  streams_ = new QLineEdit;
  streams_->setPlaceholderText(tr("endpoints of streams already running, e.g. 10.0.0.2:4420"));
  streams_->setToolTip(
      tr("Streams with one of these endpoints are analysed without an MPA "
         "handshake, with the CRC and markers above (as ddpscope analyze "
         "--stream)"));
  streams_->setAccessibleName(tr("Mid-stream endpoints"));
  form->addRow(tr("Mid-stream &endpoints:"), streams_);
  streams_error_ = new QLabel;
  streams_error_->setStyleSheet(QStringLiteral("color: #c62828"));
  streams_error_->hide();
  form->addRow(QString(), streams_error_);
  auto* regions_row = new QHBoxLayout;
  regions_ = new QLineEdit;
  regions_->setPlaceholderText(tr("none (as ddpscope analyze --regions FILE)"));
  regions_->setAccessibleName(tr("Regions file"));
  auto* regions_browse = new QToolButton;
  regions_browse->setText(tr("…"));
  regions_browse->setAccessibleName(tr("Choose regions file"));
  regions_row->addWidget(regions_, 1);
  regions_row->addWidget(regions_browse);
  form->addRow(tr("&Regions file:"), regions_row);
  connect(regions_browse, &QToolButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Regions File (STag, base, length, sink)"),
                                     regions_->text(), tr("Regions (*.json);;All files (*)"));
    if (!path.isEmpty()) regions_->setText(path);
  });

  buttons_ = new QDialogButtonBox(QDialogButtonBox::Cancel);
  buttons_->addButton(tr("&Start"), QDialogButtonBox::AcceptRole)->setDefault(true);
  form->addRow(buttons_);
  connect(buttons_, &QDialogButtonBox::accepted, this, &CaptureDialog::accept);
  connect(buttons_, &QDialogButtonBox::rejected, this, &CaptureDialog::reject);
  connect(filter_, &QLineEdit::textChanged, this, &CaptureDialog::validate);
  connect(ports_, &QLineEdit::textChanged, this, &CaptureDialog::validate);
  connect(streams_, &QLineEdit::textChanged, this, &CaptureDialog::validate);
  connect(save_, &QCheckBox::toggled, this, &CaptureDialog::validate);
  connect(save_path_, &QLineEdit::textChanged, this, [this](const QString& t) {
    if (!t.isEmpty()) save_->setChecked(true);
    validate();
  });
  connect(browse_button, &QToolButton::clicked, this, &CaptureDialog::browse);

  // The last choices (the savefile only as a suggestion: it is not ticked again).
  QSettings s;
  CaptureRequest last;
  last.interface = s.value(QStringLiteral("capture/interface"), QStringLiteral("lo")).toString();
  last.filter = s.value(QStringLiteral("capture/filter")).toString();
  parsePorts(s.value(QStringLiteral("capture/ports")).toString(), last.ports);
  // "auto", or the boolean earlier versions stored.
  const QString crc = s.value(QStringLiteral("capture/crc"), QStringLiteral("auto")).toString();
  if (crc != QStringLiteral("auto")) last.crc = s.value(QStringLiteral("capture/crc")).toBool();
  last.markers = s.value(QStringLiteral("capture/markers"), false).toBool();
  parseEndpoints(s.value(QStringLiteral("capture/streams")).toString(), last.streams);
  last.regionsPath = s.value(QStringLiteral("capture/regions")).toString();
  setRequest(last);
  save_path_->setText(s.value(QStringLiteral("capture/savefile")).toString());
  save_->setChecked(false);
  validate();
}

QPushButton* CaptureDialog::startButton() const {
  for (QAbstractButton* b : buttons_->buttons())
    if (buttons_->buttonRole(b) == QDialogButtonBox::AcceptRole)
      return qobject_cast<QPushButton*>(b);
  return nullptr;
}

CaptureRequest CaptureDialog::request() const {
  CaptureRequest r;
  r.interface = interface_->currentText().trimmed();
  r.filter = filter_->text().trimmed();
  if (save_->isChecked()) r.writePath = save_path_->text().trimmed();
  parsePorts(ports_->text(), r.ports);
  if (crc_->currentIndex() > 0) r.crc = crc_->currentIndex() == 1;
  r.markers = markers_->isChecked();
  parseEndpoints(streams_->text(), r.streams);
  r.regionsPath = regions_->text().trimmed();
  return r;
}

void CaptureDialog::setRequest(const CaptureRequest& r) {
  const int i = interface_->findText(r.interface);
  if (i >= 0)
    interface_->setCurrentIndex(i);
  else
    interface_->setEditText(r.interface);
  filter_->setText(r.filter);
  save_path_->setText(r.writePath);
  save_->setChecked(!r.writePath.isEmpty());
  QStringList ports;
  for (quint16 p : r.ports)
    ports << QString::number(p);
  ports_->setText(ports.join(QStringLiteral(", ")));
  crc_->setCurrentIndex(!r.crc ? 0 : *r.crc ? 1 : 2);
  markers_->setChecked(r.markers);
  streams_->setText(endpointsText(r.streams));
  regions_->setText(r.regionsPath);
  validate();
}

void CaptureDialog::validate() {
  const QString err = filterError(filter_->text());
  filter_error_->setText(err);
  filter_error_->setVisible(!err.isEmpty());
  QList<quint16> ports;
  const bool ports_ok = parsePorts(ports_->text(), ports);
  ports_error_->setVisible(!ports_ok);
  std::vector<net::Endpoint> endpoints;
  QString bad;
  const bool streams_ok = parseEndpoints(streams_->text(), endpoints, &bad);
  streams_error_->setText(tr("%1 is not IP:PORT").arg(bad));
  streams_error_->setVisible(!streams_ok);
  const bool save_ok = !save_->isChecked() || !save_path_->text().trimmed().isEmpty();
  if (QPushButton* start = startButton())
    start->setEnabled(err.isEmpty() && ports_ok && streams_ok && save_ok &&
                      !interface_->currentText().trimmed().isEmpty());
}

void CaptureDialog::browse() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save Capture As"), save_path_->text(),
                                                    tr("pcap (*.pcap);;All files (*)"));
  if (path.isEmpty()) return;
  save_path_->setText(path);
  save_->setChecked(true);
}

void CaptureDialog::accept() {
  validate();
  if (QPushButton* start = startButton(); start && !start->isEnabled()) return;
  const CaptureRequest r = request();
  QSettings s;
  s.setValue(QStringLiteral("capture/interface"), r.interface);
  s.setValue(QStringLiteral("capture/filter"), r.filter);
  s.setValue(QStringLiteral("capture/ports"), ports_->text());
  if (r.crc)
    s.setValue(QStringLiteral("capture/crc"), *r.crc);
  else
    s.setValue(QStringLiteral("capture/crc"), QStringLiteral("auto"));
  s.setValue(QStringLiteral("capture/markers"), r.markers);
  s.setValue(QStringLiteral("capture/streams"), streams_->text());
  s.setValue(QStringLiteral("capture/regions"), r.regionsPath);
  if (!r.writePath.isEmpty()) s.setValue(QStringLiteral("capture/savefile"), r.writePath);
  QDialog::accept();
}

}  // namespace ddpscope::gui
